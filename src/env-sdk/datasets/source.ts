/**
 * Where dataset bytes come from: a local path (Node only), an http(s) URL, or an R2 object.
 * Everything here is web-standard except the local-path branch, which imports node:fs lazily so
 * a Worker bundle that never reads local files does not need it.
 */
import { concatBytes } from "../../core/codecs/bytes";

/** The part of an R2 bucket binding a dataset read needs (structural: no Env type required). */
export interface DatasetBucket {
  head(key: string): Promise<{ size: number } | null>;
  get(
    key: string,
    options?: { range?: { offset: number; length: number } },
  ): Promise<{ body: ReadableStream<Uint8Array>; arrayBuffer(): Promise<ArrayBuffer> } | null>;
}

export type R2DatasetSource = { bucket: DatasetBucket; key: string };

/** A local path, an http(s) URL, or an R2 object. */
export type DatasetSource = string | R2DatasetSource;

export type DatasetFormat = "jsonl" | "parquet";

export type DatasetErrorCode =
  | "not_found"
  | "http_error"
  | "unknown_format"
  | "bad_json"
  | "not_parquet"
  | "unsupported_codec"
  | "missing_column"
  | "too_large"
  | "bad_gzip"
  | "bad_option";

/** Every failure of a dataset read: `code` for programs, a message that names the source. */
export class DatasetError extends Error {
  constructor(
    readonly code: DatasetErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "DatasetError";
  }
}

/** Random access to a file's bytes (the shape hyparquet reads parquet through). */
export interface RandomAccess {
  byteLength: number;
  slice(start: number, end?: number): Promise<ArrayBuffer>;
}

export function describeSource(source: DatasetSource): string {
  return typeof source === "string" ? source : `r2://${source.key}`;
}

function isUrl(source: DatasetSource): source is string {
  return typeof source === "string" && /^https?:\/\//i.test(source);
}

/** Format from the file name (query string ignored), or an error asking for `format`. */
export function detectFormat(source: DatasetSource): DatasetFormat {
  let name = typeof source === "string" ? source : source.key;
  if (isUrl(source)) name = new URL(source).pathname;
  const lower = name.toLowerCase().replace(/\.gz$/, "");
  if (lower.endsWith(".parquet")) return "parquet";
  if (lower.endsWith(".jsonl") || lower.endsWith(".ndjson")) return "jsonl";
  throw new DatasetError(
    "unknown_format",
    `cannot tell the format of ${describeSource(source)} from its name; pass format: "jsonl" or "parquet"`,
  );
}

function notFound(source: DatasetSource): DatasetError {
  return new DatasetError("not_found", `dataset not found: ${describeSource(source)}`);
}

async function fetchOk(url: string, init?: RequestInit): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch (error) {
    throw new DatasetError("http_error", `could not fetch ${url}: ${(error as Error).message}`);
  }
  if (res.ok) return res;
  await res.body?.cancel();
  if (res.status === 404) throw notFound(url);
  throw new DatasetError("http_error", `fetching ${url} failed: HTTP ${res.status}`);
}

type NodeFs = typeof import("node:fs/promises");

async function nodeFs(path: string): Promise<NodeFs> {
  try {
    return await import("node:fs/promises");
  } catch {
    throw new DatasetError(
      "bad_option",
      `local path ${path} needs Node's file system; in a Worker use an http(s) URL or an R2 object`,
    );
  }
}

async function openLocal(path: string) {
  const fs = await nodeFs(path);
  let handle: Awaited<ReturnType<NodeFs["open"]>>;
  try {
    handle = await fs.open(path, "r");
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ENOENT" || code === "ENOTDIR") throw notFound(path);
    throw error;
  }
  if ((await handle.stat()).isDirectory()) {
    await handle.close();
    throw new DatasetError("bad_option", `${path} is a directory, not a dataset file`);
  }
  return handle;
}

/** The whole content as a byte stream (read lazily; cancel it to stop early). */
export async function openStream(source: DatasetSource): Promise<ReadableStream<Uint8Array>> {
  if (typeof source !== "string") {
    const object = await source.bucket.get(source.key);
    if (!object) throw notFound(source);
    return object.body;
  }
  if (isUrl(source)) {
    const res = await fetchOk(source);
    if (!res.body) return new Blob([]).stream();
    return res.body;
  }
  const handle = await openLocal(source);
  const { Readable } = await import("node:stream");
  // autoClose: the handle closes when the stream ends or is cancelled.
  const nodeStream = handle.createReadStream({ autoClose: true });
  // why: node:stream/web's ReadableStream type is not the global one, though it is the same class.
  return Readable.toWeb(nodeStream) as unknown as ReadableStream<Uint8Array>;
}

/** Reads a stream to its end, failing once it passes `maxBytes`. */
export async function readAllBounded(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
  label: string,
): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) throw tooLarge(label, maxBytes);
      chunks.push(value);
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  }
  return concatBytes(chunks);
}

export function tooLarge(label: string, maxBytes: number): DatasetError {
  return new DatasetError(
    "too_large",
    `${label} is larger than maxBytes (${maxBytes}); raise maxBytes, or read fewer rows with limit`,
  );
}

function fromBytes(bytes: Uint8Array): RandomAccess {
  return {
    byteLength: bytes.byteLength,
    slice: async (start, end = bytes.byteLength) => bytes.slice(start, end).buffer,
  };
}

/**
 * Random access for parquet. R2 and local files are read by range (only the footer and the
 * needed column chunks); a URL is downloaded whole, up to `maxBytes`. `close` releases a local file.
 */
export async function openRandomAccess(
  source: DatasetSource,
  maxBytes: number,
): Promise<{ file: RandomAccess; close(): Promise<void> }> {
  const label = describeSource(source);
  if (typeof source !== "string") {
    const { bucket, key } = source;
    const head = await bucket.head(key);
    if (!head) throw notFound(source);
    const file: RandomAccess = {
      byteLength: head.size,
      async slice(start, end = head.size) {
        if (end <= start) return new ArrayBuffer(0);
        const object = await bucket.get(key, { range: { offset: start, length: end - start } });
        if (!object) throw notFound(source);
        return object.arrayBuffer();
      },
    };
    return { file, close: async () => {} };
  }
  if (isUrl(source)) {
    const res = await fetchOk(source);
    const declared = Number(res.headers.get("content-length") ?? Number.NaN);
    if (declared > maxBytes) {
      await res.body?.cancel();
      throw tooLarge(label, maxBytes);
    }
    const bytes = res.body ? await readAllBounded(res.body, maxBytes, label) : new Uint8Array();
    return { file: fromBytes(bytes), close: async () => {} };
  }
  const handle = await openLocal(source);
  const { size } = await handle.stat();
  const file: RandomAccess = {
    byteLength: size,
    async slice(start, end = size) {
      const buffer = new Uint8Array(Math.max(0, end - start));
      await handle.read(buffer, 0, buffer.byteLength, start);
      return buffer.buffer;
    },
  };
  return { file, close: () => handle.close() };
}
