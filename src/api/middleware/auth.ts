/**
 * Authentication and scopes. A request presents a token as Bearer, or as the HTTP Basic password
 * (so `https://user:TOKEN@host` works for unmodified Python clients). API_TOKEN is the admin token
 * (compared in constant time); other tokens are looked up by the SHA-256 of their secret
 * (src/api/storage/tokens.ts). Without API_TOKEN, only local development is open.
 *
 * `auth` (middleware) says who is calling; `authorize` (run by every route, src/api/routes/define.ts)
 * says whether that caller may call this route on this run.
 */
import type { MiddlewareHandler } from "hono";
import { type Scope, scopesAllow } from "../../core/wire/tokens";
import { type AppContext, type AppEnv, DEFAULT_RUN, type Principal } from "../context";
import { ApiError } from "../errors";
import { findToken } from "../storage/tokens";
import { checkRate } from "./quotas";

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
  let diff = a.length ^ b.length;
  // Past a string's end charCodeAt is NaN, which `| 0` makes 0: every position is compared.
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  }
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

function unauthorized(c: AppContext, message: string): ApiError {
  c.header("WWW-Authenticate", 'Bearer realm="atropos-edge"');
  return new ApiError("UNAUTHORIZED", message);
}

let warnedOpen = false;

/** Once per isolate: the operator's log says this Worker serves data without authentication. */
function warnOpenOnce(why: string): void {
  if (warnedOpen) return;
  warnedOpen = true;
  console.log(
    JSON.stringify({
      level: "warn",
      msg: `serving without authentication: no API_TOKEN is set and ${why}; set API_TOKEN (wrangler secret put API_TOKEN, or API_TOKEN=… npm run dev)`,
    }),
  );
}

async function identify(c: AppContext): Promise<Principal> {
  const adminToken = c.env.API_TOKEN;
  const presented = presentedToken(c.req.header("authorization"));
  if (presented !== null) {
    if (adminToken && sameToken(presented, adminToken)) return { kind: "admin" };
    const token = await findToken(c.env.DB, presented);
    if (token) return { kind: "token", token };
  }
  const open =
    !adminToken && (c.env.DEPLOYMENT === "local" || c.env.ALLOW_UNAUTHENTICATED === "true");
  // Open local development ignores credentials it does not know, as before tokens existed.
  if (open) {
    warnOpenOnce(
      c.env.DEPLOYMENT === "local" ? "DEPLOYMENT is local" : "ALLOW_UNAUTHENTICATED is true",
    );
    return { kind: "open" };
  }
  if (presented !== null) throw unauthorized(c, "invalid or revoked API token");
  if (adminToken) {
    throw unauthorized(
      c,
      "missing credentials: send 'Authorization: Bearer <token>' (or use https://user:<token>@host as the URL)",
    );
  }
  throw new ApiError(
    "FORBIDDEN",
    "this deployment has no API_TOKEN: run `npx wrangler secret put API_TOKEN` (then send 'Authorization: Bearer <token>'), or set ALLOW_UNAUTHENTICATED=\"true\" in wrangler.jsonc vars to serve data without authentication",
  );
}

export const auth: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.method === "OPTIONS" || isPublicPath(c.req.path)) {
    c.set("principal", { kind: "open" });
    return next();
  }
  c.set("principal", await identify(c));
  return next();
};

/** What a route declares about access (its `x-scope` and `x-contributor-own`). */
export interface RouteAccess {
  /** OpenAPI-style path of the route as mounted. */
  path: string;
  scope: Scope;
  /** Contributor tokens may also call it, on their run, seeing only groups they submitted. */
  contributorOwn: boolean;
}

/** Whether a token's scopes let it call the route (ignoring its run binding). */
export function tokenMayCall(scopes: readonly Scope[], access: RouteAccess): boolean {
  return (
    scopesAllow(scopes, access.scope) ||
    (access.contributorOwn && access.scope === "read" && scopes.includes("contributor"))
  );
}

/**
 * The run a request addresses: its `{run}`, "default" for the Atropos paths at the root, null for
 * /v1 routes about no single run (run listing, tokens).
 */
function runAddressed(c: AppContext, path: string): string | null {
  return c.req.param("run") ?? (path.startsWith("/v1/") ? null : DEFAULT_RUN);
}

/** Refuses (403, 429) a call the caller's token may not make; admin and open callers pass. */
export function authorize(c: AppContext, access: RouteAccess): void {
  if (isPublicPath(access.path)) return;
  const principal = c.get("principal");
  if (principal.kind !== "token") return;
  const { token } = principal;
  if (!tokenMayCall(token.scopes, access)) {
    throw new ApiError(
      "FORBIDDEN",
      `${c.req.method} ${access.path} needs the '${access.scope}' scope (or admin); token '${token.name}' has ${token.scopes.join(", ")}`,
    );
  }
  if (token.run !== null) {
    const run = runAddressed(c, access.path);
    if (run !== token.run) {
      throw new ApiError(
        "FORBIDDEN",
        run === null
          ? `token '${token.name}' is bound to run '${token.run}' and this route is not about one run`
          : `token '${token.name}' is bound to run '${token.run}', not '${run}'`,
      );
    }
  }
  checkRate(token);
}

/** The token id a submission is attributed to (null: API_TOKEN or open local development). */
export function submitterOf(c: AppContext): string | null {
  const principal = c.get("principal");
  return principal.kind === "token" ? principal.token.id : null;
}

/** For a token that may read only what it submitted (a contributor), its id; else null. */
export function ownGroupsOnly(c: AppContext): string | null {
  const principal = c.get("principal");
  if (principal.kind !== "token" || scopesAllow(principal.token.scopes, "read")) return null;
  return principal.token.id;
}
