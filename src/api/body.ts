/**
 * Bounded request-body reading: a size cap on the wire and on gzip inflation (zip bombs), both
 * answered with a clear 413 before anything is stored, and an idle limit: a body that stops
 * arriving is answered 408 instead of holding its request open (workerd never times out a
 * pending request body; it closes only idle connections and slow headers).
 */
import { concatBytes } from "../core/codecs/bytes";
import { gunzipBounded, InflateLimitError } from "../core/codecs/gzip";
import { MAX_JSON_DEPTH, tooDeep } from "../core/codecs/json-depth";
import { ApiError } from "./errors";

export interface BodyLimits {
  maxBodyBytes: number;
  maxInflatedBytes: number;
  /** A read that waits longer than this for the next bytes ends with 408. */
  idleTimeoutMs: number;
  /** The settings (or rule) the limits come from, named in a 413: MAX_BODY_BYTES by default. */
  bodySetting?: string;
  /** MAX_INFLATED_BYTES by default. */
  inflatedSetting?: string;
}

export interface ReadBody {
  /** Bytes as received (possibly gzip). */
  raw: Uint8Array<ArrayBuffer>;
  /** Decoded JSON text bytes. */
  bytes: Uint8Array<ArrayBuffer>;
  gzip: boolean;
}

/** Thrown by `readWithin` when no bytes arrived within the idle limit. */
class BodyIdle extends Error {}

/** The next read of `reader` (into `view` for a BYOB reader), or BodyIdle past `idleMs`. */
export async function readWithin<T>(
  reader: ReadableStreamDefaultReader<T>,
  idleMs: number,
): Promise<ReadableStreamReadResult<T>>;
export async function readWithin(
  reader: ReadableStreamBYOBReader,
  idleMs: number,
  view: Uint8Array<ArrayBuffer>,
): Promise<ReadableStreamReadResult<Uint8Array<ArrayBuffer>>>;
export async function readWithin<T>(
  reader: ReadableStreamDefaultReader<T> | ReadableStreamBYOBReader,
  idleMs: number,
  view?: Uint8Array<ArrayBuffer>,
): Promise<ReadableStreamReadResult<unknown>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BodyIdle()), idleMs);
  });
  const read: Promise<ReadableStreamReadResult<unknown>> = view
    ? (reader as ReadableStreamBYOBReader).read(view)
    : (reader as ReadableStreamDefaultReader<T>).read();
  // A read left behind by the timer settles when the stream is cancelled: never unhandled.
  read.catch(() => {});
  try {
    return await Promise.race([read, idle]);
  } finally {
    clearTimeout(timer);
  }
}

function bodyTimeout(idleMs: number): ApiError {
  return new ApiError(
    "REQUEST_TIMEOUT",
    `request body stopped arriving: no bytes for ${idleMs} ms (the body idle limit); send the whole body without pausing`,
  );
}

// A BYOB read takes whatever has arrived, up to its buffer: one read per 64 KiB–1 MiB instead of
// one per ~4 KB chunk of the default reader (each read with its idle timer was most of the
// API's CPU on 2k-token gzip bodies; docs/BENCHMARKS.md). The buffer grows with what arrived,
// never with a declared length, so a stalled upload holds at most about what it sent.
const FIRST_READ_BYTES = 64 * 1024;
const MAX_READ_BYTES = 1024 * 1024;

/** A byte stream's reader that reads into our buffers, or null when the stream has none. */
function byobReader(stream: ReadableStream<Uint8Array>): ReadableStreamBYOBReader | null {
  try {
    return stream.getReader({ mode: "byob" });
  } catch {
    return null;
  }
}

/**
 * The chunks of a stream, at most `limit` bytes in all (413 past it), never waiting more than
 * `idleMs` for the next one (408). Only bytes that arrived are held: a declared length
 * (`declared`, Content-Length) only ever shrinks the first read's buffer, never grows it.
 * Stopping early cancels the stream.
 */
export async function* chunksOf(
  stream: ReadableStream<Uint8Array>,
  limit: number,
  idleMs: number,
  what: string,
  setting = "MAX_BODY_BYTES",
  declared: number | null = null,
): AsyncGenerator<Uint8Array> {
  let total = 0;
  const byob = byobReader(stream);
  const reader = byob ?? stream.getReader();
  // A small body (a lease's or an ack's "{}") reads into a buffer its size, one byte over so
  // the read that finds the end needs no larger one: not 64 KiB per request.
  const first =
    declared === null ? FIRST_READ_BYTES : Math.min(FIRST_READ_BYTES, Math.max(declared, 0) + 1);
  let scratch = byob ? new Uint8Array(new ArrayBuffer(first)) : null;
  try {
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = scratch
          ? await readWithin(byob!, idleMs, scratch)
          : await readWithin(reader as ReadableStreamDefaultReader<Uint8Array>, idleMs);
      } catch (error) {
        if (error instanceof BodyIdle) throw bodyTimeout(idleMs);
        // A request body's stream fails only when its connection does: the client went away.
        throw new ApiError(
          "CLIENT_CLOSED",
          `the client closed the connection before the ${what} arrived whole (${String(error)})`,
        );
      }
      if (next.done) return;
      let chunk = next.value;
      if (scratch) {
        // The read hands the buffer back in `value`; what it filled is copied out, so the chunks
        // handed on never share memory with the next read.
        const size = Math.min(MAX_READ_BYTES, Math.max(first, total + chunk.byteLength));
        scratch =
          chunk.buffer.byteLength >= size
            ? new Uint8Array(chunk.buffer as ArrayBuffer)
            : new Uint8Array(new ArrayBuffer(size));
        chunk = chunk.slice();
      }
      total += chunk.byteLength;
      if (total > limit) {
        throw new ApiError(
          "PAYLOAD_TOO_LARGE",
          `${what} exceeds the limit of ${limit} bytes (${setting}); split the submission (e.g. fewer groups per /scored_data_list call) or raise the server's limit`,
        );
      }
      yield chunk;
      // All the declared bytes are here (the runtime frames a body by its Content-Length): no
      // read, and no idle timer, for the end.
      if (total === declared) return;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** A stream read to its end within `chunksOf`'s limits, as one array. */
export async function collect(
  stream: ReadableStream<Uint8Array>,
  limit: number,
  idleMs: number,
  what: string,
  setting?: string,
  declared: number | null = null,
): Promise<Uint8Array<ArrayBuffer>> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of chunksOf(stream, limit, idleMs, what, setting, declared)) {
    chunks.push(chunk);
  }
  if (chunks.length === 1 && chunks[0]!.buffer instanceof ArrayBuffer) {
    return chunks[0] as Uint8Array<ArrayBuffer>;
  }
  return concatBytes(chunks);
}

/** Atropos' rule: any Content-Encoding that contains "gzip", in any case. */
export function isGzipEncoded(request: Request): boolean {
  return (request.headers.get("content-encoding") ?? "").toLowerCase().includes("gzip");
}

/**
 * The body length the client declared (Content-Length), or null when it sent none, or sent the
 * body chunked (which then frames it, whatever Content-Length says).
 */
export function declaredLength(request: Request): number | null {
  if (request.headers.has("transfer-encoding")) return null;
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  return Number.isFinite(declared) ? declared : null;
}

/**
 * Reads and drops a request body nobody read, up to `maxBytes`, giving up when no bytes arrive
 * for `idleMs`. workerd closes a keep-alive connection whose request body was left unread, without
 * saying so, and the client's next request on it fails with a connection reset (docs/API.md).
 * Bodies declared larger are left alone: reading them would cost more than a new connection.
 */
export async function discardUnreadBody(
  request: Request,
  maxBytes: number,
  idleMs: number,
): Promise<void> {
  const body = request.body;
  if (!body || request.bodyUsed || body.locked) return;
  const declared = declaredLength(request);
  if (declared !== null && declared > maxBytes) return;
  let total = 0;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await readWithin(reader, idleMs);
      if (done) return;
      total += value.byteLength;
      if (total > maxBytes) break;
    }
  } catch {
    // The client stalled, went away or the stream broke: nothing left to keep alive.
  }
  reader.cancel().catch(() => {});
}

/**
 * Refuses a body by its declared length before a byte of it is read: 413 above `maxBodyBytes`.
 */
export function refuseDeclaredLength(request: Request, limits: BodyLimits): void {
  const declared = declaredLength(request);
  if (declared !== null && declared > limits.maxBodyBytes) {
    throw new ApiError(
      "PAYLOAD_TOO_LARGE",
      `request body of ${declared} bytes exceeds the limit of ${limits.maxBodyBytes} bytes (${limits.bodySetting ?? "MAX_BODY_BYTES"}); split the submission or raise the server's limit`,
    );
  }
}

/** Reads the raw body (as sent, gzip or not) within the limits: 413 over size, 408 when idle. */
export function readRawBody(
  request: Request,
  limits: BodyLimits,
): Promise<Uint8Array<ArrayBuffer>> {
  refuseDeclaredLength(request, limits);
  if (!request.body) return Promise.resolve(new Uint8Array(new ArrayBuffer(0)));
  return collect(
    request.body,
    limits.maxBodyBytes,
    limits.idleTimeoutMs,
    "request body",
    limits.bodySetting,
    declaredLength(request),
  );
}

/**
 * Inflates a gzip body within `maxInflatedBytes`: inflation stops there (413, naming `setting`);
 * 400 for data that is not gzip.
 */
export function inflateBody(
  raw: Uint8Array,
  maxInflatedBytes: number,
  setting = "MAX_INFLATED_BYTES",
): Uint8Array<ArrayBuffer> {
  try {
    return gunzipBounded(raw, maxInflatedBytes);
  } catch (error) {
    if (error instanceof InflateLimitError) {
      throw new ApiError(
        "PAYLOAD_TOO_LARGE",
        `decompressed request body exceeds the limit of ${error.limitBytes} bytes (${setting}); split the submission (e.g. fewer groups per /scored_data_list call) or raise the server's limit`,
      );
    }
    throw new ApiError("INVALID_GZIP", "Invalid gzip payload");
  }
}

export async function readBody(request: Request, limits: BodyLimits): Promise<ReadBody> {
  const raw = await readRawBody(request, limits);
  const gzip = isGzipEncoded(request);
  if (!gzip || raw.byteLength === 0) return { raw, bytes: raw, gzip: false };
  return {
    raw,
    bytes: inflateBody(raw, limits.maxInflatedBytes, limits.inflatedSetting),
    gzip: true,
  };
}

const decoder = new TextDecoder();

/**
 * 422 for JSON text nested deeper than MAX_JSON_DEPTH (src/core/codecs/json-depth.ts: Python trainers
 * cannot decode ~1000 levels); `loc` locates the text in the body.
 */
export function refuseTooDeep(text: string, loc: (string | number)[] = ["body"]): void {
  const deep = tooDeep(text);
  if (!deep) return;
  const where = [...loc, ...deep.loc];
  const msg = `nested more than ${MAX_JSON_DEPTH} levels deep; JSON values may nest at most ${MAX_JSON_DEPTH} levels (Python's json module fails near 1000)`;
  throw new ApiError("VALIDATION_FAILED", `${where.join(".")}: ${msg}`, [
    { type: "value_error", loc: where, msg },
  ]);
}

/** Parses JSON, answering malformed input the way FastAPI does (422 json_invalid). */
export function parseJson(bytes: Uint8Array): unknown {
  if (bytes.byteLength === 0) {
    throw new ApiError("VALIDATION_FAILED", "request body is empty; send a JSON document", [
      { type: "missing", loc: ["body"], msg: "Field required" },
    ]);
  }
  const text = decoder.decode(bytes);
  refuseTooDeep(text);
  try {
    return JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : "JSON decode error";
    throw new ApiError("VALIDATION_FAILED", `request body is not valid JSON: ${reason}`, [
      {
        type: "json_invalid",
        loc: ["body", 0],
        msg: "JSON decode error",
        input: {},
      },
    ]);
  }
}
