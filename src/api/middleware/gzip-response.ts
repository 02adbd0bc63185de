/**
 * Gzip JSON and text responses of 1000 bytes or more when the client accepts gzip (as Atropos'
 * GZipMiddleware); everything else goes out as it is. Bodies are compressed here at a fast level
 * and sent with manual encoding; a batch streamed from storage arrives already compressed (its
 * groups are stored compressed, src/api/delivery.ts) and is left as it is.
 *
 * Two things in front of the Worker would otherwise decide differently (docs/COMPATIBILITY.md):
 * - Cloudflare's edge (and Miniflare's imitation of it) replaces the request's Accept-Encoding with
 *   "br, gzip" and keeps the client's own value in `request.cf.clientAcceptEncoding`; that value is
 *   what the client can decode.
 * - The edge compresses any JSON or text response of 48 bytes or more for a client that accepts
 *   it, unless the response says `Cache-Control: no-transform`; responses left plain here say so.
 */
import { gzipSync } from "node:zlib";
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../context";
import { acceptsGzip } from "../request";
import { replaceResponse, setResponseHeader } from "./response-headers";

const MIN_BYTES = 1000;

/** Marks the response no-transform (setResponseHeader: on a copy when its headers are immutable). */
function markNoTransform(c: Context): void {
  const cacheControl = c.res.headers.get("cache-control");
  if (!cacheControl) setResponseHeader(c, "Cache-Control", "no-transform");
  else if (!/\bno-transform\b/i.test(cacheControl)) {
    setResponseHeader(c, "Cache-Control", `${cacheControl}, no-transform`);
  }
}

export const gzipResponse: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (!c.res.body || c.res.headers.has("content-encoding")) return;
  const type = c.res.headers.get("content-type") ?? "";
  if (!/json|text\/plain/.test(type)) return;
  if (!acceptsGzip(c.req.raw)) return markNoTransform(c);
  const bytes = new Uint8Array(await c.res.arrayBuffer());
  if (bytes.byteLength < MIN_BYTES) {
    replaceResponse(c, new Response(bytes, c.res));
    markNoTransform(c);
    return;
  }
  // In memory: compressed here at level 1, a third of the runtime's own cost for batch JSON
  // (the runtime's level is not configurable), and sent as is.
  const compressed = new Response(gzipSync(bytes, { level: 1 }), {
    status: c.res.status,
    headers: c.res.headers,
    encodeBody: "manual",
  });
  compressed.headers.set("Content-Encoding", "gzip");
  compressed.headers.delete("content-length");
  compressed.headers.append("Vary", "Accept-Encoding");
  replaceResponse(c, compressed);
};
