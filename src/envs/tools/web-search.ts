/**
 * `web_search`: a search tool with a pluggable backend. The default, `bm25`, ranks the bundled
 * offline corpus (src/envs/data/search-corpus.ts, 200+ documents) with Okapi BM25, so runs and
 * tests need no network and give the same results every time. `http` asks a real search API
 * (SearXNG's JSON, Brave, or anything answering GET with a list of {title, url, snippet}).
 */
import { z } from "../../sdk/env";
import { type CorpusDocument, searchCorpus } from "../data/search-corpus";
import type { Tool } from "./toolbox";

export const WebSearchConfigSchema = z.discriminatedUnion("backend", [
  z
    .object({
      /** BM25 over the bundled offline corpus. */
      backend: z.literal("bm25"),
      max_results: z.number().int().min(1).max(10).default(3),
    })
    .strict(),
  z
    .object({
      backend: z.literal("http"),
      /** GET URL with `{query}` (URL-encoded) and optionally `{k}`, e.g. SearXNG `…/search?q={query}&format=json`. */
      url: z
        .string()
        .url()
        .refine((u) => u.includes("{query}"), "url must contain {query}"),
      /** Request headers, e.g. {"X-Subscription-Token": "…"} for Brave. */
      headers: z.record(z.string(), z.string()).default({}),
      /** Dotted path of the result list in the JSON answer (SearXNG: results; Brave: web.results). */
      results_path: z.string().min(1).default("results"),
      max_results: z.number().int().min(1).max(10).default(3),
    })
    .strict(),
]);
export type WebSearchConfig = z.output<typeof WebSearchConfigSchema>;

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface SearchBackend {
  search(query: string, k: number): Promise<SearchResult[]>;
}

const STOPWORDS = new Set(
  "a an and are as at be by for from has in is it its of on or that the to was were what which who with does do how".split(
    " ",
  ),
);

export function searchTerms(text: string): string[] {
  return (
    text
      .toLowerCase()
      .normalize("NFKD")
      .match(/[a-z0-9]+/g) ?? []
  ).filter((t) => !STOPWORDS.has(t));
}

/** Okapi BM25 (k1 1.2, b 0.75) over a fixed set of documents (title counted with the text). */
export class Bm25Index implements SearchBackend {
  private readonly tf: Map<string, number>[];
  private readonly lengths: number[];
  private readonly df = new Map<string, number>();
  private readonly avgLength: number;

  constructor(
    private readonly docs: readonly CorpusDocument[],
    private readonly k1 = 1.2,
    private readonly b = 0.75,
  ) {
    this.tf = docs.map((d) => {
      const counts = new Map<string, number>();
      for (const t of searchTerms(`${d.title} ${d.text}`)) counts.set(t, (counts.get(t) ?? 0) + 1);
      for (const t of counts.keys()) this.df.set(t, (this.df.get(t) ?? 0) + 1);
      return counts;
    });
    this.lengths = this.tf.map((m) => [...m.values()].reduce((a, c) => a + c, 0));
    this.avgLength = this.lengths.reduce((a, c) => a + c, 0) / Math.max(1, docs.length);
  }

  /** Documents by descending score (positive scores only; ties keep corpus order). */
  rank(query: string): { doc: CorpusDocument; score: number }[] {
    const terms = [...new Set(searchTerms(query))];
    const n = this.docs.length;
    const scored = this.docs.map((doc, i) => {
      let score = 0;
      for (const t of terms) {
        const f = this.tf[i]!.get(t);
        if (!f) continue;
        const df = this.df.get(t)!;
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        const norm = this.k1 * (1 - this.b + (this.b * this.lengths[i]!) / this.avgLength);
        score += (idf * f * (this.k1 + 1)) / (f + norm);
      }
      return { doc, score, i };
    });
    return scored
      .filter((s) => s.score > 0)
      .sort((a, b) => b.score - a.score || a.i - b.i)
      .map(({ doc, score }) => ({ doc, score }));
  }

  async search(query: string, k: number): Promise<SearchResult[]> {
    return this.rank(query)
      .slice(0, k)
      .map(({ doc }) => ({ title: doc.title, url: doc.url, snippet: doc.text }));
  }
}

let corpusIndex: Bm25Index | null = null;

/** The BM25 index of the bundled corpus (built on first use, then shared). */
export function corpusSearch(): Bm25Index {
  corpusIndex ??= new Bm25Index(searchCorpus());
  return corpusIndex;
}

function at(value: unknown, path: string): unknown {
  let v = value;
  for (const key of path.split(".")) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

const text = (v: unknown) => (typeof v === "string" ? v : "");

/** A search API answering GET with JSON; `fetchFn` is a seam for tests. */
export function httpSearch(
  config: Extract<WebSearchConfig, { backend: "http" }>,
  fetchFn: typeof fetch = fetch,
): SearchBackend {
  return {
    async search(query, k) {
      const url = config.url
        .replaceAll("{query}", encodeURIComponent(query))
        .replaceAll("{k}", String(k));
      const res = await fetchFn(url, {
        headers: { accept: "application/json", ...config.headers },
      });
      if (!res.ok) throw new Error(`search API answered HTTP ${res.status}`);
      const list = at(await res.json(), config.results_path);
      if (!Array.isArray(list))
        throw new Error(`search API answer has no list at '${config.results_path}'`);
      return list.slice(0, k).map((r: unknown) => {
        const o = (r ?? {}) as Record<string, unknown>;
        return {
          title: text(o.title),
          url: text(o.url) || text(o.link),
          snippet: text(o.snippet) || text(o.content) || text(o.description),
        };
      });
    },
  };
}

export function searchBackend(config: WebSearchConfig, fetchFn?: typeof fetch): SearchBackend {
  return config.backend === "bm25" ? corpusSearch() : httpSearch(config, fetchFn);
}

const SNIPPET_CHARS = 500;

/** Results as the policy reads them: numbered, title, URL, snippet. */
export function formatResults(results: SearchResult[]): string {
  if (results.length === 0) return "no results";
  return results
    .map((r, i) => `${i + 1}. ${r.title} (${r.url})\n${r.snippet.slice(0, SNIPPET_CHARS)}`)
    .join("\n\n");
}

export function webSearchTool(
  config: WebSearchConfig,
  timeoutMs: number,
  backend: SearchBackend = searchBackend(config),
): Tool {
  return {
    timeoutMs,
    definition: {
      type: "function",
      function: {
        name: "web_search",
        description: `Search the web; returns up to ${config.max_results} results (title, URL, snippet).`,
        parameters: {
          type: "object",
          properties: {
            query: { type: "string" },
            max_results: { type: "integer", minimum: 1, maximum: config.max_results },
          },
          required: ["query"],
        },
      },
    },
    run: async (args) => {
      if (typeof args.query !== "string" || args.query.trim() === "")
        throw new Error("'query' must be a non-empty string");
      const asked = Number(args.max_results ?? config.max_results);
      const k = Number.isInteger(asked) ? Math.min(Math.max(asked, 1), config.max_results) : 1;
      return formatResults(await backend.search(args.query, k));
    },
  };
}
