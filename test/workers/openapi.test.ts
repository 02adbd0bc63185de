import { describe, expect, it } from "vitest";
import { createApp } from "../../src/api/app";
import { routeTable } from "../../src/api/routes";
import { SCOPES } from "../../src/api/routes/define";
import { call, json } from "./helpers";

type Operation = {
  "x-scope"?: string;
  responses: Record<string, unknown>;
  parameters?: { name: string; in: string }[];
  requestBody?: {
    content: Record<string, { schema: { properties?: Record<string, unknown> } }>;
  };
};
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };

const HTTP_METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options"]);

function documentedOperations(doc: Document): string[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => HTTP_METHODS.has(m))
      .map((m) => `${m.toUpperCase()} ${path}`),
  );
}

/** What the app serves, from Hono's own route list, with `:param` written as `{param}`. */
function servedOperations(): string[] {
  return (
    createApp()
      .routes.filter((r) => r.method !== "ALL") // middleware (app.use)
      // The dashboard is static files served by the assets binding, not part of the API.
      .filter((r) => r.path !== "/dashboard" && !r.path.startsWith("/dashboard/"))
      .map((r) => `${r.method} ${r.path.replaceAll(/:([^/]+)/g, "{$1}")}`)
  );
}

describe("/openapi.json", () => {
  it("documents every route the app serves, and nothing else", async () => {
    const doc = await json<Document>(call("/openapi.json"));
    expect(doc.openapi).toBe("3.1.0");
    const documented = documentedOperations(doc).sort();
    const served = [...new Set(servedOperations())].sort();
    expect(documented).toEqual(served);
    // Routes the hand-written document used to miss.
    for (const op of [
      "POST /v1/runs/{run}/env-workers",
      "GET /v1/runs/{run}/env-workers/{env}/{instance}",
      "POST /v1/runs/{run}/env-workers/{env}/{instance}/stop",
      "GET /v1/runs",
      "GET /openapi.json",
      "POST /runs/{run}/reset_data",
    ]) {
      expect(documented).toContain(op);
    }
  });

  it("gives every operation a scope, a success response and the error shape", async () => {
    const doc = await json<Document>(call("/openapi.json"));
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (!HTTP_METHODS.has(method)) continue;
        const where = `${method.toUpperCase()} ${path}`;
        expect(SCOPES, where).toContain(op["x-scope"]);
        expect(
          Object.keys(op.responses).some((s) => s.startsWith("2")),
          where,
        ).toBe(true);
        expect(op.responses["500"], where).toBeDefined();
      }
    }
    const error = (doc as unknown as { components: { schemas: Record<string, unknown> } })
      .components.schemas.Error;
    expect(error).toMatchObject({ required: ["detail", "error"] });
  });

  it("documents path parameters and request bodies from the schemas that validate them", async () => {
    const doc = await json<Document>(call("/openapi.json"));
    const ack = doc.paths["/v1/runs/{run}/batches/{batchId}/ack"]?.post;
    expect(ack?.parameters?.map((p) => p.name).sort()).toEqual(["batchId", "run"]);
    const scored = doc.paths["/runs/{run}/scored_data"]?.post;
    expect(scored?.parameters?.map((p) => p.name)).toContain("run");
    expect(
      scored?.requestBody?.content["application/json"]?.schema.properties?.tokens,
    ).toMatchObject({ type: "array", items: { type: "array", items: { type: "integer" } } });
    const statusEnv = doc.paths["/status-env"]?.get;
    expect(statusEnv?.requestBody).toBeDefined();
  });

  it("exports a route table with the scope of each route", () => {
    const table = routeTable(createApp());
    const scopeOf = (method: string, path: string) =>
      table.find((r) => r.method === method && r.path === path)?.scope;
    expect(scopeOf("GET", "/reset_data")).toBe("admin");
    expect(scopeOf("POST", "/v1/runs/{run}/env-workers")).toBe("admin");
    expect(scopeOf("POST", "/register")).toBe("trainer");
    expect(scopeOf("POST", "/v1/runs/{run}/batches/lease")).toBe("trainer");
    expect(scopeOf("POST", "/runs/{run}/scored_data")).toBe("contributor");
    expect(scopeOf("POST", "/v1/tokens")).toBe("admin");
    expect(scopeOf("DELETE", "/v1/tokens/{id}")).toBe("admin");
    expect(scopeOf("GET", "/status-env")).toBe("env");
    expect(scopeOf("GET", "/v1/runs/{run}/stats")).toBe("read");
    expect(scopeOf("GET", "/openapi.json")).toBe("read");
    expect(new Set(table.map((r) => `${r.method} ${r.path}`)).size).toBe(table.length);
    expect(table.length).toBe(servedOperations().length);
  });
});
