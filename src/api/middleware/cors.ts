/**
 * CORS for an explicit allowlist only (CORS_ORIGINS, comma-separated). Atropos reflected any
 * origin with credentials; here unknown origins get no CORS headers and the dashboard is same-origin.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../context";
import { setResponseHeader } from "./response-headers";

export const cors: MiddlewareHandler<AppEnv> = async (c, next) => {
  const origin = c.req.header("origin");
  const allowed = (c.env.CORS_ORIGINS ?? "")
    .split(",")
    .map((o) => o.trim())
    .filter(Boolean);
  const ok = origin !== undefined && allowed.includes(origin);
  if (c.req.method === "OPTIONS") {
    const headers: Record<string, string> = { Vary: "Origin" };
    if (ok) {
      headers["Access-Control-Allow-Origin"] = origin;
      headers["Access-Control-Allow-Methods"] = "GET, POST, PUT, PATCH, DELETE, OPTIONS";
      headers["Access-Control-Allow-Headers"] =
        "Authorization, Content-Type, Content-Encoding, Idempotency-Key, X-Request-Id";
      headers["Access-Control-Max-Age"] = "600";
    }
    return new Response(null, { status: 204, headers });
  }
  await next();
  setResponseHeader(c, "Vary", "Origin", { append: true });
  if (ok) setResponseHeader(c, "Access-Control-Allow-Origin", origin);
};
