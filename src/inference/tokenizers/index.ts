import { sha256Hex } from "../../core/codecs/sha256";
import { errorMessage } from "../../core/errors";
import type { Tokenizer } from "../types";
import { HfTokenizer, type TokenizerFiles } from "./hf-tokenizer";
import {
  availableTokenizerNames,
  FAMILY_SOURCES,
  resolveTokenizerFamily,
  TOKENIZER_FAMILIES,
  type TokenizerFamily,
} from "./registry";

export { ChatTemplate, withToolPrompt } from "./chat-template";
export type { TokenizerConfig, TokenizerFiles, TokenizerJson } from "./hf-tokenizer";
export { HfTokenizer } from "./hf-tokenizer";
export type { TokenizerFamily } from "./registry";
export {
  availableTokenizerNames,
  FAMILY_SOURCES,
  resolveTokenizerFamily,
  TOKENIZER_FAMILIES,
} from "./registry";

/** The part of an R2 bucket the loader reads (Workers' R2Bucket fits). */
export interface R2Reader {
  get(
    key: string,
  ): Promise<{ text(): Promise<string>; arrayBuffer(): Promise<ArrayBuffer> } | null>;
}

export interface GetTokenizerOptions {
  /** Bucket for `r2://<prefix>` sources (in the Worker: env.PAYLOADS). */
  bucket?: R2Reader;
  fetch?: typeof fetch;
}

const R2_PREFIX = "r2://";
const inWorker = typeof navigator !== "undefined" && navigator.userAgent === "Cloudflare-Workers";

function nodeFiles() {
  return import("./node-files");
}

type Resolved =
  | { kind: "bundled"; family: TokenizerFamily }
  | { kind: "url"; url: string }
  | { kind: "r2"; prefix: string }
  | { kind: "dir"; dir: string }
  | { kind: "hub"; id: string };

async function resolveSource(source: string): Promise<Resolved> {
  const trimmed = source.trim();
  if (/^https?:\/\//i.test(trimmed)) return { kind: "url", url: trimmed.replace(/\/+$/, "") };
  if (trimmed.startsWith(R2_PREFIX)) {
    return { kind: "r2", prefix: trimmed.slice(R2_PREFIX.length).replace(/^\/+|\/+$/g, "") };
  }
  const family = resolveTokenizerFamily(trimmed);
  if (family) return { kind: "bundled", family };
  if (!inWorker) {
    const { isDirectory } = await nodeFiles();
    const path = await import("node:path");
    const dir = path.resolve(trimmed.replace(/^~(?=$|\/)/, process.env.HOME ?? "~"));
    if (isDirectory(dir)) return { kind: "dir", dir };
  }
  if (/^[\w.-]+\/[\w.-]+$/.test(trimmed) && !trimmed.startsWith(".")) {
    return { kind: "hub", id: trimmed };
  }
  throw new Error(
    `No tokenizer "${source}": not a bundled family (${availableTokenizerNames().join(", ")}), ` +
      "a directory with tokenizer.json + tokenizer_config.json, an http(s) URL of such a folder, " +
      "an r2://<prefix>, or a Hugging Face id (org/name).",
  );
}

function keyOf(resolved: Resolved): string {
  switch (resolved.kind) {
    case "bundled":
      return `bundled:${resolved.family}`;
    case "url":
      return `url:${resolved.url}`;
    case "r2":
      return `r2:${resolved.prefix}`;
    case "dir":
      return `dir:${resolved.dir}`;
    case "hub":
      return `hub:${resolved.id}`;
  }
}

async function readR2(bucket: R2Reader, prefix: string): Promise<TokenizerFiles> {
  const read = async (name: string) => {
    const key = prefix ? `${prefix}/${name}` : name;
    const object = await bucket.get(key);
    if (!object) throw new Error(`R2 object ${key} not found`);
    return JSON.parse(await object.text());
  };
  const [tokenizerJson, tokenizerConfig] = await Promise.all([
    read("tokenizer.json"),
    read("tokenizer_config.json"),
  ]);
  return { tokenizerJson, tokenizerConfig };
}

async function fetchFiles(baseUrl: string, fetchFn: typeof fetch): Promise<TokenizerFiles> {
  const read = async (name: string) => {
    const url = `${baseUrl}/${name}`;
    const response = await fetchFn(url);
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`GET ${url}: HTTP ${response.status}`);
    }
    return response.json();
  };
  const [tokenizerJson, tokenizerConfig] = await Promise.all([
    read("tokenizer.json"),
    read("tokenizer_config.json"),
  ]);
  return { tokenizerJson, tokenizerConfig } as TokenizerFiles;
}

async function loadFiles(
  resolved: Resolved,
  options: GetTokenizerOptions,
): Promise<TokenizerFiles> {
  const fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
  switch (resolved.kind) {
    case "r2":
      if (!options.bucket) throw new Error("r2:// tokenizer sources need a bucket (env.PAYLOADS)");
      return readR2(options.bucket, resolved.prefix);
    case "url":
      if (inWorker) return fetchFiles(resolved.url, fetchFn);
      return (await nodeFiles()).downloadCached(resolved.url, fetchFn);
    case "bundled":
      if (inWorker) return workerBundled(resolved.family, options);
      return (await nodeFiles()).readBundled(resolved.family);
    case "dir":
      return (await nodeFiles()).readDirectory(resolved.dir);
    case "hub": {
      if (inWorker) throw new Error(`Hugging Face ids (${resolved.id}) resolve in Node only`);
      const endpoint = (process.env.HF_ENDPOINT ?? "https://huggingface.co").replace(/\/+$/, "");
      const token = process.env.HF_TOKEN;
      const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
      return (await nodeFiles())
        .downloadCached(`${endpoint}/${resolved.id}/resolve/main`, fetchFn, headers)
        .catch((error: unknown) => {
          throw hubError(resolved.id, endpoint, error);
        });
    }
  }
}

/**
 * A Hub download that failed, worded for the person who asked for it: which tokenizer, that it
 * is not bundled, why the Hub did not answer, and how to pass the files instead.
 */
function hubError(id: string, endpoint: string, error: unknown): Error {
  const message = errorMessage(error);
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const http = /HTTP (\d+)/.exec(message)?.[1];
  const why = http
    ? `the Hugging Face Hub (${endpoint}) answered HTTP ${http}${http === "401" || http === "403" ? " (a gated model: set HF_TOKEN)" : ""}`
    : `the Hugging Face Hub (${endpoint}) could not be reached (${cause?.code ?? cause?.message ?? message})`;
  return new Error(
    `tokenizer "${id}" is not bundled (${TOKENIZER_FAMILIES.join(", ")}) and ${why}. Download its tokenizer.json and tokenizer_config.json into a directory and pass that directory (--tokenizer ./${id.split("/").at(-1)}-tokenizer), or set HF_ENDPOINT to a mirror`,
    { cause: error },
  );
}

/** Written by scripts/tokenizers-r2.mjs after a family's files: which version is there. */
interface SeedMarker {
  files: Record<string, string>;
}

/**
 * In a Worker the package's files cannot be read: a bundled family comes from R2, as
 * `tokenizers/<family>/<name>.br` (brotli, uploaded with a `bundled.json` marker by the dev
 * server and `npm run deploy`; scripts/tokenizers-r2.mjs), or as plain files someone put at
 * `tokenizers/<family>/`.
 */
async function workerBundled(
  family: TokenizerFamily,
  options: GetTokenizerOptions,
): Promise<TokenizerFiles> {
  const prefix = `tokenizers/${family}`;
  const missing = (why: string) =>
    new Error(
      `tokenizer ${family}: ${why}. A Worker reads bundled tokenizers from ${prefix}/ in the ` +
        "PAYLOADS R2 bucket: `npm run dev` and `atropos-edge start` upload them to local R2 at " +
        "start; for your Cloudflare account run `npm run deploy -- --tokenizers-only` (every " +
        "`npm run deploy` does it too, in this repository and in projects made by " +
        "atropos-edge init). Or name an " +
        "r2://<prefix> or URL holding tokenizer.json + tokenizer_config.json.",
    );
  const bucket = options.bucket;
  if (!bucket) throw missing("no R2 bucket was given (env.PAYLOADS)");
  const marker = await bucket.get(`${prefix}/bundled.json`);
  if (!marker) {
    if (!(await bucket.get(`${prefix}/tokenizer.json`))) throw missing(`not in R2 at ${prefix}/`);
    return readR2(bucket, prefix);
  }
  const expected = (JSON.parse(await marker.text()) as SeedMarker).files;
  const { brotliDecompressSync } = await import("node:zlib");
  const read = async (name: "tokenizer.json" | "tokenizer_config.json") => {
    const object = await bucket.get(`${prefix}/${name}.br`);
    if (!object) throw missing(`${prefix}/${name}.br is missing from R2`);
    const plain = brotliDecompressSync(new Uint8Array(await object.arrayBuffer()));
    // zlib returns a Buffer over a plain ArrayBuffer (never a SharedArrayBuffer).
    if (sha256Hex(plain) !== expected[name]) {
      throw missing(`${prefix}/${name}.br in R2 does not match its sha256 in bundled.json`);
    }
    return JSON.parse(plain.toString("utf8"));
  };
  // One after the other: both parsed vocabularies at once would double the peak heap.
  const tokenizerJson = await read("tokenizer.json");
  const tokenizerConfig = await read("tokenizer_config.json");
  return { tokenizerJson, tokenizerConfig };
}

const cache = new Map<string, Promise<HfTokenizer>>();

/**
 * A tokenizer by bundled family or model name ("qwen3", "Qwen/Qwen3-8B"), directory, http(s)
 * URL of a folder, `r2://<prefix>` (with options.bucket) or Hugging Face id (Node, internet).
 * Each folder must hold tokenizer.json + tokenizer_config.json. Cached per source.
 */
export function getTokenizer(
  source: string,
  options: GetTokenizerOptions = {},
): Promise<Tokenizer & HfTokenizer> {
  return resolveSource(source).then((resolved) => {
    const key = keyOf(resolved);
    let pending = cache.get(key);
    if (!pending) {
      const name = resolved.kind === "bundled" ? resolved.family : source.trim();
      const addBos =
        resolved.kind === "bundled" ? FAMILY_SOURCES[resolved.family].addBos : undefined;
      pending = loadFiles(resolved, options).then(
        (files) => new HfTokenizer(name, files, { addBos }),
      );
      pending.catch(() => cache.delete(key));
      cache.set(key, pending);
    }
    return pending;
  });
}

/** Each bundled family with absolute paths of plain copies of its files (Node only). */
export async function listBundledTokenizers(): Promise<
  { name: TokenizerFamily; tokenizer_json: string; tokenizer_config: string }[]
> {
  const { materialiseBundled } = await nodeFiles();
  return TOKENIZER_FAMILIES.map((name) => {
    const paths = materialiseBundled(name);
    return {
      name,
      tokenizer_json: paths["tokenizer.json"],
      tokenizer_config: paths["tokenizer_config.json"],
    };
  });
}
