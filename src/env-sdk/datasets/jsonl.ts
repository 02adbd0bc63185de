/**
 * JSONL decoding from a byte stream, one line at a time, so a `limit` stops the read early and
 * only the kept rows stay in memory. Gzip is recognised by its magic bytes (a `.jsonl.gz` file, or
 * one served without Content-Encoding) and inflated with DecompressionStream.
 */
import type { JsonObject } from "../base-env";
import { DatasetError, tooLarge } from "./source";

/** Puts already-read bytes back in front of the rest of a stream. */
function withPrefix(
  prefix: Uint8Array,
  reader: ReadableStreamDefaultReader<Uint8Array>,
): ReadableStream<Uint8Array> {
  let sentPrefix = prefix.byteLength === 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sentPrefix) {
        sentPrefix = true;
        controller.enqueue(prefix);
        return;
      }
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/** The stream, inflated when it starts with the gzip magic bytes 1f 8b. */
async function maybeGunzip(
  stream: ReadableStream<Uint8Array>,
): Promise<{ stream: ReadableStream<Uint8Array>; gzipped: boolean }> {
  const reader = stream.getReader();
  let head = new Uint8Array(0);
  while (head.byteLength < 2) {
    const { done, value } = await reader.read();
    if (done) break;
    const joined = new Uint8Array(head.byteLength + value.byteLength);
    joined.set(head);
    joined.set(value, head.byteLength);
    head = joined;
  }
  const rest = withPrefix(head, reader);
  if (head[0] !== 0x1f || head[1] !== 0x8b) return { stream: rest, gzipped: false };
  // why: DOM and workers-types disagree on DecompressionStream's generic types; bytes in, bytes out.
  const inflate = new DecompressionStream("gzip") as unknown as TransformStream<
    Uint8Array,
    Uint8Array
  >;
  return { stream: rest.pipeThrough(inflate), gzipped: true };
}

export type JsonlReadOptions = {
  label: string;
  maxBytes: number;
  /** Called for each parsed row with its 1-based line number; return false to stop reading. */
  onRow(row: JsonObject, line: number): boolean;
};

/** Parses JSONL rows from `stream` (blank lines skipped), cancelling it when onRow says stop. */
export async function readJsonl(
  stream: ReadableStream<Uint8Array>,
  { label, maxBytes, onRow }: JsonlReadOptions,
): Promise<void> {
  const { stream: text, gzipped } = await maybeGunzip(stream);
  const reader = text.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  let lineNo = 0;
  let bytes = 0;
  let finished = false;

  const handle = (raw: string): boolean => {
    lineNo++;
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line.trim() === "") return true;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new DatasetError(
        "bad_json",
        `${label}: bad JSON on line ${lineNo}: ${(error as Error).message}`,
      );
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      throw new DatasetError("bad_json", `${label}: line ${lineNo} is not a JSON object`);
    }
    return onRow(value as JsonObject, lineNo);
  };

  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        // A truncated or corrupt gzip member surfaces here, from DecompressionStream.
        if (!gzipped) throw error;
        throw new DatasetError("bad_gzip", `${label}: ${(error as Error).message}`);
      }
      if (chunk.done) break;
      bytes += chunk.value.byteLength;
      if (bytes > maxBytes) throw tooLarge(label, maxBytes);
      pending += decoder.decode(chunk.value, { stream: true });
      let start = 0;
      let newline = pending.indexOf("\n");
      while (newline !== -1) {
        if (!handle(pending.slice(start, newline))) return;
        start = newline + 1;
        newline = pending.indexOf("\n", start);
      }
      pending = pending.slice(start);
    }
    finished = true;
    pending += decoder.decode();
    if (pending !== "") handle(pending);
  } finally {
    // Stopping early (limit, error) must release the body: Workers allow few open connections.
    if (!finished) await reader.cancel().catch(() => {});
  }
}
