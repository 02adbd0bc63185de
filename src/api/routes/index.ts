/**
 * Every API route, in matching order: the one place that says which routes exist, where they are
 * mounted and the scope each needs.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../context";
import { atroposRoutes } from "./atropos";
import {
  type ApiRoute,
  type MountOptions,
  mountRoutes,
  runParams,
  SCOPES,
  type Scope,
} from "./define";
import { openApiRoute } from "./openapi";
import { v1Routes } from "./v1";

function groups(app: OpenAPIHono<AppEnv>): [readonly ApiRoute[], MountOptions][] {
  return [
    [[openApiRoute(app)], {}],
    [v1Routes, { prefix: "/v1" }],
    [atroposRoutes, { prefix: "/runs/{run}", params: runParams, summarySuffix: " (run-scoped)" }],
    [atroposRoutes, {}],
  ];
}

/** Registers every route on the app and in its OpenAPI document. */
export function registerRoutes(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "basic", {
    type: "http",
    scheme: "basic",
  });
  for (const [routes, options] of groups(app)) mountRoutes(app, routes, options);
}

export interface RouteTableEntry {
  method: string;
  /** OpenAPI style: /runs/{run}/register. */
  path: string;
  scope: Scope;
  /** Contributor tokens may also call it (their run, their groups). */
  contributorOwn: boolean;
}

/** Method, path and scope of every API route (what an access-control test walks). */
export function routeTable(app: OpenAPIHono<AppEnv>): RouteTableEntry[] {
  return app.openAPIRegistry.definitions.flatMap((def) =>
    def.type === "route"
      ? [
          {
            method: def.route.method.toUpperCase(),
            path: def.route.path,
            // defineRoute requires the field; the registry's type does not know it.
            scope: z.enum(SCOPES).parse(Reflect.get(def.route, "x-scope")),
            contributorOwn: Reflect.get(def.route, "x-contributor-own") === true,
          },
        ]
      : [],
  );
}
