/**
 * How a route is written: a `createRoute` definition (request and response schemas, error
 * responses, the scope it needs) and its handler, registered together so /openapi.json lists
 * exactly the routes the app serves.
 *
 * Handlers read their input themselves with the declared schemas (src/api/request.ts) instead of
 * @hono/zod-openapi's validators: those answer in their own error shape, refuse gzip and
 * content-type-less bodies, and consume the body that the fast ingest path streams.
 */
import { createRoute, type OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import { z } from "zod";
import { errorBodySchema } from "../../core/wire/api-schemas";
import { runNameSchema } from "../../core/wire/schemas";
import type { Scope } from "../../core/wire/tokens";
import type { AppContext, AppEnv } from "../context";
import { authorize, isPublicPath } from "../middleware/auth";

/** Who may call a route (src/core/wire/tokens.ts says which token scopes grant which route scope). */
export { SCOPES, type Scope } from "../../core/wire/tokens";

export type RouteHandler = (c: AppContext) => Response | Promise<Response>;

type ScopedRouteConfig = RouteConfig & {
  "x-scope": Scope;
  /** A read route contributor tokens may also call: on their own run, seeing only their groups. */
  "x-contributor-own"?: true;
};

export interface ApiRoute {
  route: ScopedRouteConfig;
  handler: RouteHandler;
}

export function defineRoute(config: ScopedRouteConfig, handler: RouteHandler): ApiRoute {
  return { route: createRoute(config), handler };
}

const errorContent = { "application/json": { schema: errorBodySchema } };

/** Error responses in the project's error shape (src/api/errors.ts), by status. */
export function errors(described: Record<number, string>): RouteConfig["responses"] {
  return Object.fromEntries(
    Object.entries(described).map(([status, description]) => [
      status,
      { description, content: errorContent },
    ]),
  );
}

/** What any route that reads a body may answer besides its own errors. */
export function bodyErrors(
  validation = "The body is not valid JSON or fails the schema (FastAPI-style `detail` list).",
): RouteConfig["responses"] {
  return {
    400: {
      description:
        "A gzip body that does not inflate (plain text `Invalid gzip payload`, as Atropos answers), or another malformed request.",
      content: { ...errorContent, "text/plain": { schema: z.string() } },
    },
    ...errors({
      408: "The body stopped arriving for BODY_IDLE_TIMEOUT_MS (default 30 s).",
      413: "The body (or its inflated size, or a list's group count) is over the limit.",
      422: validation,
    }),
  };
}

export function jsonContent<T extends z.ZodType>(schema: T) {
  return { "application/json": { schema } };
}

/** A JSON request body documented from `schema` (read by the handler with the same schema). */
export function jsonRequest<T extends z.ZodType>(schema: T, required = true) {
  return {
    required,
    description:
      "JSON; `Content-Encoding: gzip` bodies are accepted." +
      (required ? "" : " May be empty (counts as `{}`)."),
    content: jsonContent(schema),
  };
}

export const runParams = z.object({
  run: runNameSchema.describe("The run; the root paths address run `default`."),
});

const authErrors = errors({
  401: "Missing, invalid or revoked API token.",
  403: "The token lacks the route's scope or is bound to another run; or this deployment has no API token and does not allow unauthenticated access.",
  429: "The token is over a quota (requests per second, bytes per day); see `Retry-After`.",
});
const pathErrors = errors({ 400: "A path parameter (or a query parameter) is invalid." });
const internalError = errors({ 500: "Unexpected failure; the request may be retried." });

/** Hono's `:param` for OpenAPI's `{param}`. */
export function honoPath(path: string): string {
  return path.replaceAll(/\{([^}]+)\}/g, ":$1");
}

/** Joins a mount prefix and a route path the way Hono's `app.route` does ("/" adds nothing). */
function joinPath(prefix: string, path: string): string {
  if (prefix === "") return path;
  return path === "/" ? prefix : `${prefix}${path}`;
}

export interface MountOptions {
  /** OpenAPI-style prefix, e.g. "/runs/{run}". */
  prefix?: string;
  /** The prefix's path parameters. */
  params?: z.ZodObject;
  /** Appended to each summary, to tell a mounted copy from the original. */
  summarySuffix?: string;
}

/** Registers routes on the app and in its OpenAPI registry. */
export function mountRoutes(
  app: OpenAPIHono<AppEnv>,
  routes: readonly ApiRoute[],
  options: MountOptions = {},
): void {
  const { prefix = "", params: prefixParams, summarySuffix = "" } = options;
  for (const { route, handler } of routes) {
    const path = joinPath(prefix, route.path);
    const ownParams = route.request?.params as z.ZodObject | undefined;
    const params =
      prefixParams && ownParams
        ? prefixParams.extend(ownParams.shape)
        : (prefixParams ?? ownParams);
    app.openAPIRegistry.registerPath({
      ...route,
      path,
      ...(route.summary ? { summary: route.summary + summarySuffix } : {}),
      ...(isPublicPath(path) ? { security: [] } : {}),
      request: { ...route.request, ...(params ? { params } : {}) },
      responses: {
        ...(path.includes("{") ? pathErrors : {}),
        ...route.responses,
        ...(isPublicPath(path) ? {} : authErrors),
        ...internalError,
      },
    });
    const access = {
      path,
      scope: route["x-scope"],
      contributorOwn: route["x-contributor-own"] === true,
    };
    app.on(route.method.toUpperCase(), honoPath(path), (c) => {
      authorize(c, access);
      return handler(c);
    });
  }
}
