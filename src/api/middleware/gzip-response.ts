/**
 * Gzip JSON and text responses of 1000 bytes or more when the client accepts gzip (as Atropos'
 * GZipMiddleware); everything else goes out as it is. Setting Content-Encoding is enough: the
 * Workers runtime compresses the body natively. Streamed batch bodies are always large, so they
 * qualify without being measured.
 *
 * Two things in front of the Worker would otherwise decide differently (docs/COMPATIBILITY.md):
 * - Cloudflare's edge (and Miniflare's imitation of it) replaces the request's Accept-Encoding with
 *   "br, gzip" and keeps the client's own value in `request.cf.clientAcceptEncoding`; that value is
 *   what the client can decode.
 * - The edge compresses any JSON or text response of 48 bytes or more for a client that accepts
 *   it, unless the response says `Cache-Control: no-transform`; responses left plain here say so.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../context";

const MIN_BYTES = 1000;

/** The Accept-Encoding the client sent, not the one the edge substituted. */
function clientAcceptEncoding(request: Request): string {
  const cf = request.cf as { clientAcceptEncoding?: unknown } | undefined;
  if (typeof cf?.clientAcceptEncoding === "string") return cf.clientAcceptEncoding;
  return request.headers.get("accept-encoding") ?? "";
}

function markNoTransform(headers: Headers): void {
  const cacheControl = headers.get("cache-control");
  if (!cacheControl) headers.set("Cache-Control", "no-transform");
  else if (!/\bno-transform\b/i.test(cacheControl)) {
    headers.set("Cache-Control", `${cacheControl}, no-transform`);
  }
}

export const gzipResponse: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (!c.res.body || c.res.headers.has("content-encoding")) return;
  const type = c.res.headers.get("content-type") ?? "";
  if (!/json|text\/plain/.test(type)) return;
  if (!/\bgzip\b/i.test(clientAcceptEncoding(c.req.raw))) {
    // A copy: responses fetched from bindings have immutable headers.
    c.res = new Response(c.res.body, c.res);
    markNoTransform(c.res.headers);
    return;
  }
  let body: BodyInit = c.res.body;
  if (!c.res.headers.has("x-batch-id")) {
    const bytes = await c.res.arrayBuffer();
    body = bytes;
    if (bytes.byteLength < MIN_BYTES) {
      c.res = new Response(bytes, c.res);
      markNoTransform(c.res.headers);
      return;
    }
  }
  const compressed = new Response(body, c.res);
  compressed.headers.set("Content-Encoding", "gzip");
  compressed.headers.delete("content-length");
  compressed.headers.append("Vary", "Accept-Encoding");
  c.res = compressed;
};
