/**
 * Bearer-token (or HTTP Basic with the token as password, so `https://user:TOKEN@host` works for
 * unmodified Python clients) authentication. Without a token, only local development is open.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../context";
import { ApiError } from "../errors";

function presentedToken(header: string | undefined): string | null {
  if (!header) return null;
  const [scheme, value] = header.split(/\s+/, 2);
  if (!scheme || !value) return null;
  if (scheme.toLowerCase() === "bearer") return value;
  if (scheme.toLowerCase() === "basic") {
    try {
      const decoded = atob(value);
      const colon = decoded.indexOf(":");
      return colon >= 0 ? decoded.slice(colon + 1) : decoded;
    } catch {
      return null;
    }
  }
  return null;
}

/** Constant-time comparison so response timing does not leak the token. */
function sameToken(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

export function isPublicPath(path: string): boolean {
  return (
    path === "/" ||
    path === "/openapi.json" ||
    path === "/dashboard" ||
    path.startsWith("/dashboard/")
  );
}

export const auth: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.method === "OPTIONS" || isPublicPath(c.req.path)) return next();
  const token = c.env.API_TOKEN;
  if (token) {
    const presented = presentedToken(c.req.header("authorization"));
    if (presented === null || !sameToken(presented, token)) {
      c.header("WWW-Authenticate", 'Bearer realm="atropos-edge"');
      throw new ApiError(
        "UNAUTHORIZED",
        presented === null
          ? "missing credentials: send 'Authorization: Bearer <API_TOKEN>' (or use https://user:<API_TOKEN>@host as the URL)"
          : "invalid API token",
      );
    }
    return next();
  }
  const local = c.env.DEPLOYMENT === "local";
  if (!local && c.env.ALLOW_UNAUTHENTICATED !== "true") {
    throw new ApiError(
      "FORBIDDEN",
      "this deployment has no API_TOKEN: run `npx wrangler secret put API_TOKEN` (then send 'Authorization: Bearer <token>'), or set ALLOW_UNAUTHENTICATED=\"true\" in wrangler.jsonc vars to serve data without authentication",
    );
  }
  return next();
};
