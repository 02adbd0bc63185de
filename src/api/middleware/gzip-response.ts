/**
 * Gzip responses of 1000 bytes or more when the client accepts it (as Atropos' GZipMiddleware).
 * Setting Content-Encoding is enough: the Workers runtime compresses the body natively.
 * Streamed batch bodies are always large, so they qualify without being measured.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../context";

const MIN_BYTES = 1000;

export const gzipResponse: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const accept = c.req.header("accept-encoding") ?? "";
  if (!/\bgzip\b/i.test(accept) || !c.res.body || c.res.headers.has("content-encoding")) return;
  const type = c.res.headers.get("content-type") ?? "";
  if (!/json|text\/plain/.test(type)) return;
  let body: BodyInit = c.res.body;
  if (!c.res.headers.has("x-batch-id")) {
    const bytes = await c.res.arrayBuffer();
    body = bytes;
    if (bytes.byteLength < MIN_BYTES) {
      c.res = new Response(bytes, c.res);
      return;
    }
  }
  const compressed = new Response(body, c.res);
  compressed.headers.set("Content-Encoding", "gzip");
  compressed.headers.delete("content-length");
  compressed.headers.append("Vary", "Accept-Encoding");
  c.res = compressed;
};
