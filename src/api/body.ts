/**
 * Bounded request-body reading: a size cap on the wire and on gzip inflation (zip bombs),
 * both answered with a clear 413 before anything is stored.
 */
import { gunzipBounded, InflateLimitError } from "../core/gzip";
import { ApiError } from "./errors";

export interface BodyLimits {
  maxBodyBytes: number;
  maxInflatedBytes: number;
}

export interface ReadBody {
  /** Bytes as received (possibly gzip). */
  raw: Uint8Array<ArrayBuffer>;
  /** Decoded JSON text bytes. */
  bytes: Uint8Array<ArrayBuffer>;
  gzip: boolean;
}

async function collect(
  stream: ReadableStream<Uint8Array>,
  limit: number,
  what: string,
): Promise<Uint8Array<ArrayBuffer>> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw new ApiError(
        "PAYLOAD_TOO_LARGE",
        `${what} exceeds the limit of ${limit} bytes; split the submission (e.g. fewer groups per /scored_data_list call) or raise the server's limit`,
      );
    }
    chunks.push(value);
  }
  if (chunks.length === 1 && chunks[0]!.buffer instanceof ArrayBuffer) {
    return chunks[0] as Uint8Array<ArrayBuffer>;
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

/** Atropos' rule: any Content-Encoding that contains "gzip", in any case. */
export function isGzipEncoded(request: Request): boolean {
  return (request.headers.get("content-encoding") ?? "").toLowerCase().includes("gzip");
}

/** The body length the client declared (Content-Length), or null when it sent none. */
export function declaredLength(request: Request): number | null {
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  return Number.isFinite(declared) ? declared : null;
}

/**
 * Reads and drops a request body nobody read, up to `maxBytes`. workerd closes a keep-alive
 * connection whose request body was left unread, without saying so, and the client's next request
 * on it fails with a connection reset (docs/API.md). Bodies declared larger are left alone: reading
 * them would cost more than a new connection.
 */
export async function discardUnreadBody(request: Request, maxBytes: number): Promise<void> {
  const body = request.body;
  if (!body || request.bodyUsed || body.locked) return;
  const declared = declaredLength(request);
  if (declared !== null && declared > maxBytes) return;
  let total = 0;
  try {
    const reader = body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel();
        return;
      }
    }
  } catch {
    // The client went away or the stream broke: nothing left to keep alive.
  }
}

export async function readBody(request: Request, limits: BodyLimits): Promise<ReadBody> {
  const declared = declaredLength(request);
  if (declared !== null && declared > limits.maxBodyBytes) {
    throw new ApiError(
      "PAYLOAD_TOO_LARGE",
      `request body of ${declared} bytes exceeds the limit of ${limits.maxBodyBytes} bytes`,
    );
  }
  // A declared length is enforced by the runtime, so the body can be read in one piece.
  const raw = !request.body
    ? new Uint8Array(new ArrayBuffer(0))
    : declared !== null
      ? new Uint8Array(await request.arrayBuffer())
      : await collect(request.body, limits.maxBodyBytes, "request body");
  const gzip = isGzipEncoded(request);
  if (!gzip || raw.byteLength === 0) return { raw, bytes: raw, gzip: false };
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = gunzipBounded(raw, limits.maxInflatedBytes);
  } catch (error) {
    if (error instanceof InflateLimitError) {
      throw new ApiError(
        "PAYLOAD_TOO_LARGE",
        `decompressed request body exceeds the limit of ${error.limitBytes} bytes; split the submission (e.g. fewer groups per /scored_data_list call) or raise the server's limit`,
      );
    }
    throw new ApiError("INVALID_GZIP", "Invalid gzip payload");
  }
  return { raw, bytes, gzip: true };
}

const decoder = new TextDecoder();

/** Parses JSON, answering malformed input the way FastAPI does (422 json_invalid). */
export function parseJson(bytes: Uint8Array): unknown {
  if (bytes.byteLength === 0) {
    throw new ApiError("VALIDATION_FAILED", "request body is empty; send a JSON document", [
      { type: "missing", loc: ["body"], msg: "Field required" },
    ]);
  }
  const text = decoder.decode(bytes);
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
