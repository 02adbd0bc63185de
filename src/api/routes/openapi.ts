import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../context";
import { type ApiRoute, defineRoute, jsonContent } from "./define";

/** GET /openapi.json: the document generated from the app's route definitions. */
export function openApiRoute(app: OpenAPIHono<AppEnv>): ApiRoute {
  let document: unknown = null;
  return defineRoute(
    {
      method: "get",
      path: "/openapi.json",
      "x-scope": "read",
      summary: "This API's OpenAPI 3.1 document",
      description: "Needs no token.",
      responses: {
        200: {
          description: "Generated from the route definitions.",
          content: jsonContent(z.record(z.string(), z.unknown())),
        },
      },
    },
    (c) => {
      document ??= app.getOpenAPI31Document({
        openapi: "3.1.0",
        info: {
          title: "atropos-edge rollout API",
          version: "0.1.0",
          description:
            "Atropos-compatible rollout API with exactly-once leases, idempotent submissions and policy-version staleness control. Each operation's `x-scope` names the scope it needs.",
        },
        security: [{ bearer: [] }, { basic: [] }],
      });
      return c.json(document);
    },
  );
}
