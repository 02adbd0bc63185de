/**
 * Node-only tokenizer file access: bundled families (brotli files next to this module), user
 * directories, and a disk cache for downloads. Imported dynamically so Workers never load it.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { brotliDecompressSync } from "node:zlib";
import type { TokenizerFiles } from "./hf-tokenizer";
import type { TokenizerFamily } from "./registry";

const BUNDLED_DIR = fileURLToPath(new URL("./bundled/", import.meta.url));
export const FILE_NAMES = ["tokenizer.json", "tokenizer_config.json"] as const;
type FileName = (typeof FILE_NAMES)[number];

interface ManifestEntry {
  files: Record<FileName, { sha256: string; bytes: number }>;
}

let manifest: Record<string, ManifestEntry> | undefined;
function manifestEntry(family: TokenizerFamily): ManifestEntry {
  manifest ??= JSON.parse(readFileSync(path.join(BUNDLED_DIR, "MANIFEST.json"), "utf8")) as Record<
    string,
    ManifestEntry
  >;
  const entry = manifest[family];
  if (!entry) throw new Error(`bundled tokenizer ${family} is missing from MANIFEST.json`);
  return entry;
}

/** Where downloads and plain copies of bundled files go (ATROPOS_EDGE_CACHE_DIR overrides). */
export function tokenizerCacheDir(): string {
  const base =
    process.env.ATROPOS_EDGE_CACHE_DIR ??
    path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), ".cache"), "atropos-edge");
  return path.join(base, "tokenizers");
}

function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

function writeAtomically(file: string, data: Buffer): void {
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, data);
  renameSync(temp, file);
}

/** The plain bundled file, checked against the manifest's sha256. */
function bundledFile(family: TokenizerFamily, name: FileName): Buffer {
  const data = brotliDecompressSync(readFileSync(path.join(BUNDLED_DIR, family, `${name}.br`)));
  if (sha256(data) !== manifestEntry(family).files[name].sha256) {
    throw new Error(`bundled ${family}/${name} does not match its sha256 in MANIFEST.json`);
  }
  return data;
}

function parseFiles(read: (name: FileName) => Buffer, where: string): TokenizerFiles {
  const parse = (name: FileName) => {
    try {
      return JSON.parse(read(name).toString("utf8"));
    } catch (error) {
      throw new Error(`${where}: cannot read ${name}: ${(error as Error).message}`);
    }
  };
  return {
    tokenizerJson: parse("tokenizer.json"),
    tokenizerConfig: parse("tokenizer_config.json"),
  };
}

export function readBundled(family: TokenizerFamily): TokenizerFiles {
  return parseFiles((name) => bundledFile(family, name), `bundled tokenizer ${family}`);
}

/** Plain copies of a bundled family's files (written once into the cache), for other tools. */
export function materialiseBundled(family: TokenizerFamily): Record<FileName, string> {
  const entry = manifestEntry(family);
  const dir = path.join(
    tokenizerCacheDir(),
    "bundled",
    `${family}-${entry.files["tokenizer.json"].sha256.slice(0, 12)}`,
  );
  mkdirSync(dir, { recursive: true });
  const paths = {} as Record<FileName, string>;
  for (const name of FILE_NAMES) {
    const file = path.join(dir, name);
    const current = existsSync(file) ? readFileSync(file) : null;
    if (!current || sha256(current) !== entry.files[name].sha256) {
      writeAtomically(file, bundledFile(family, name));
    }
    paths[name] = file;
  }
  return paths;
}

export function isDirectory(candidate: string): boolean {
  try {
    return statSync(candidate).isDirectory();
  } catch {
    return false;
  }
}

export function readDirectory(dir: string): TokenizerFiles {
  return parseFiles((name) => readFileSync(path.join(dir, name)), dir);
}

/**
 * Files fetched from `baseUrl` (a folder holding the two files), cached on disk by URL so a
 * second process reads them offline.
 */
export async function downloadCached(
  baseUrl: string,
  fetchFn: typeof fetch,
  headers: Record<string, string> = {},
): Promise<TokenizerFiles> {
  const dir = path.join(tokenizerCacheDir(), "url", sha256(Buffer.from(baseUrl)).slice(0, 24));
  mkdirSync(dir, { recursive: true });
  const contents = {} as Record<FileName, Buffer>;
  const fetched: FileName[] = [];
  for (const name of FILE_NAMES) {
    const file = path.join(dir, name);
    if (existsSync(file)) {
      contents[name] = readFileSync(file);
      continue;
    }
    const url = `${baseUrl.replace(/\/+$/, "")}/${name}`;
    const response = await fetchFn(url, { headers });
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`GET ${url}: HTTP ${response.status}`);
    }
    contents[name] = Buffer.from(await response.arrayBuffer());
    fetched.push(name);
  }
  // Parsed before caching: a bad body is never kept.
  const files = parseFiles((name) => contents[name], baseUrl);
  for (const name of fetched) writeAtomically(path.join(dir, name), contents[name]);
  writeFileSync(path.join(dir, "SOURCE"), `${baseUrl}\n`);
  return files;
}
