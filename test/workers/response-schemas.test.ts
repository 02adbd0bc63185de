/**
 * Every JSON read route answers exactly the shape its OpenAPI definition declares: the response
 * is parsed with the route's own zod schema, and parsing must neither fail nor drop a field (an
 * undeclared field means the document, the trainer client and the dashboard have drifted). The
 * routes are walked from the app's registry, so a new GET route is checked without editing here.
 */
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { createApp } from "../../src/api/app";
import { call, group, json, post, setupRun, uniqueRun } from "./helpers";

/** Read routes whose parameters this test cannot provide cheaply, with where they are covered. */
const COVERED_ELSEWHERE = new Map([
  ["/v1/runs/{run}/env-workers/{env}/{instance}", "needs a started feeder: env-feeder.test.ts"],
  ["/v1/runs/{run}/proxy/{session}/state", "needs a session: inference-proxy.test.ts"],
  ["/v1/runs/{run}/atropos-proxy/{session}/nodes", "needs a session: inference-proxy.test.ts"],
]);

interface JsonRead {
  path: string;
  schema: z.ZodType;
}

function jsonReadRoutes(): JsonRead[] {
  const reads: JsonRead[] = [];
  for (const def of createApp().openAPIRegistry.definitions) {
    if (def.type !== "route" || def.route.method !== "get" || !def.route.path.startsWith("/v1/")) {
      continue;
    }
    const ok = def.route.responses[200];
    const media = ok && "content" in ok ? ok.content?.["application/json"] : undefined;
    const schema = media && "schema" in media ? media.schema : undefined;
    if (schema) reads.push({ path: def.route.path, schema: schema as z.ZodType });
  }
  return reads;
}

describe("read routes answer their declared schema", () => {
  it("for a run with envs, groups, batches, evals and checkpoints", async () => {
    const run = uniqueRun("shapes");
    const { envIds } = await setupRun(run, 4, [2, 2]);
    for (const [i, envId] of envIds.entries()) {
      for (let seed = 0; seed < 3; seed++) {
        const res = await post(`/runs/${run}/scored_data`, group(seed + 10 * i, 2, envId));
        expect(res.status).toBe(200);
      }
    }
    const leased = await post(`/v1/runs/${run}/batches/lease`, { lease_seconds: 60 });
    expect(leased.status).toBe(200);
    const { batch_id, lease_id } = await json<{ batch_id: string; lease_id: string }>(leased);
    expect((await post(`/v1/runs/${run}/batches/${batch_id}/ack`, { lease_id })).status).toBe(200);
    await post(`/v1/runs/${run}/batches/lease`, { lease_seconds: 60 });
    expect(
      (await post(`/v1/runs/${run}/envs/0/evals`, { step: 1, metrics: { accuracy: 0.5 } })).status,
    ).toBe(200);
    const saved = await call(`/v1/runs/${run}/envs/0/checkpoints/1`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ cursor: 3 }),
    });
    expect(saved.status).toBe(200);
    const { groups } = await json<{ groups: { id: number }[] }>(call(`/v1/runs/${run}/groups`));

    const params: Record<string, string> = {
      run,
      envId: "0",
      id: String(groups[0]!.id),
      step: "1",
    };
    const checked: string[] = [];
    for (const { path, schema } of jsonReadRoutes()) {
      if (COVERED_ELSEWHERE.has(path)) continue;
      const url = path.replaceAll(/\{([^}]+)\}/g, (_, name: string) => {
        const value = params[name];
        if (value === undefined) throw new Error(`no value for {${name}} in ${path}`);
        return value;
      });
      const res = await call(url);
      expect(res.status, `${url}: ${res.status}`).toBe(200);
      const body: unknown = await res.json();
      const parsed = schema.safeParse(body);
      expect(parsed.success, `${url}: ${parsed.error?.message}`).toBe(true);
      // Parsing strips undeclared fields: equality means the schema declares every field.
      expect(parsed.data, `${url} answers fields its schema does not declare`).toEqual(body);
      checked.push(path);
    }
    expect(checked).toEqual(
      expect.arrayContaining([
        "/v1/runs",
        "/v1/runs/{run}/stats",
        "/v1/runs/{run}/groups",
        "/v1/runs/{run}/groups/{id}",
        "/v1/runs/{run}/batches",
        "/v1/runs/{run}/timeseries",
        "/v1/runs/{run}/envs/{envId}/scores",
      ]),
    );
  });
});
