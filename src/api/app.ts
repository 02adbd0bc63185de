/**
 * The Hono application: middleware, the API routes (src/api/routes: Atropos paths at the root and
 * under /runs/{run}, /v1 routes, the generated OpenAPI document) and the dashboard's static assets.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { InferenceProxy } from "../core/wire/proxy-session";
import type { AppEnv } from "./context";
import { ApiError, errorBody } from "./errors";
import { auth } from "./middleware/auth";
import { cors } from "./middleware/cors";
import { drainUnreadBody } from "./middleware/drain-body";
import { gzipResponse } from "./middleware/gzip-response";
import { requestContext } from "./middleware/request-context";
import { registerRoutes } from "./routes";
import { MISSING_MIGRATION } from "./storage/transitions";

export interface AppOptions {
  /** Serves the inference proxy's routes (the Worker factory passes the ManagedServer's). */
  inferenceProxy?: InferenceProxy;
}

export function createApp(options: AppOptions = {}) {
  const app = new OpenAPIHono<AppEnv>();
  app.use("*", drainUnreadBody, requestContext, cors, gzipResponse, auth);
  app.use("*", async (c, next) => {
    c.set("inferenceProxy", options.inferenceProxy);
    await next();
  });

  app.get("/dashboard", (c) => c.redirect("/dashboard/", 302));
  app.get("/dashboard/*", async (c) => {
    if (!c.env.ASSETS) throw new ApiError("NOT_FOUND", "dashboard assets are not bound");
    // The assets server maps /dashboard/ to index.html itself.
    return c.env.ASSETS.fetch(c.req.raw);
  });

  registerRoutes(app);

  app.notFound((c) => {
    const error = new ApiError(
      "NOT_FOUND",
      `no route for ${c.req.method} ${c.req.path}; see /openapi.json`,
    );
    return c.json(errorBody(error, c.get("requestId") ?? ""), 404);
  });
  app.onError((err, c) => {
    const requestId = c.get("requestId") ?? "";
    if (err instanceof ApiError) {
      // Atropos answers a bad gzip body with plain text; its clients only look at the status.
      if (err.code === "INVALID_GZIP") return c.text("Invalid gzip payload", 400);
      for (const [name, value] of Object.entries(err.headers ?? {})) c.header(name, value);
      return c.json(errorBody(err, requestId), err.status as 400);
    }
    console.error(
      JSON.stringify({
        level: "error",
        msg: "unhandled",
        request_id: requestId,
        error: String(err),
        stack: err instanceof Error ? err.stack : undefined,
      }),
    );
    const internal = new ApiError(
      "INTERNAL",
      String(err).includes(MISSING_MIGRATION)
        ? `internal error (request id ${requestId}): ${MISSING_MIGRATION}`
        : missingMigration(err)
          ? `internal error (request id ${requestId}): this server's D1 database lacks a migration its code needs; its operator must apply them (npx wrangler d1 migrations apply DB, with --remote for a deployment)`
          : `internal error (request id ${requestId}); the request may be retried`,
    );
    return c.json(errorBody(internal, requestId), 500);
  });
  return app;
}

/**
 * Whether D1 refused a statement for a table or column it does not have: code deployed before
 * its migration. The client is told that much; which table or column goes to the log only.
 * (The lease and ack guard says which migrations itself: MISSING_MIGRATION, which reaches here
 * as a plain Error's text when it crossed the coordinator's RPC.)
 */
function missingMigration(error: unknown): boolean {
  const text = String(error);
  return (
    /\b(D1_ERROR|SQLITE_ERROR)\b/.test(text) &&
    /\bno such (table|column)\b|\bhas no column named\b/.test(text)
  );
}
