/**
 * The JSON bodies of routes that are not submissions: a gzip bomb stops inflating at
 * MAX_JSON_BODY_BYTES (413 naming the setting), and the checkpoint route's 413 names its own limit.
 */
import { describe, expect, it } from "vitest";
import { call, callWith, gzip, setupRun, uniqueRun } from "./helpers";

describe("JSON body limits", () => {
  it("stops inflating a gzip body to a JSON route at MAX_JSON_BODY_BYTES", async () => {
    const run = uniqueRun("json-limit");
    await setupRun(run, 8, [2]);
    const body = await gzip(`${" ".repeat(200_000)}{}`);
    const res = await callWith({ MAX_JSON_BODY_BYTES: "100000" }, `/v1/runs/${run}/tasks`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body,
    });
    expect(res.status).toBe(413);
    expect(await res.text()).toContain("MAX_JSON_BODY_BYTES");
  });

  it("names the 1 MiB checkpoint limit, not MAX_BODY_BYTES", async () => {
    const run = uniqueRun("ckpt-limit");
    const { envIds } = await setupRun(run, 8, [2]);
    const state = JSON.stringify({ blob: "x".repeat(2 * 2 ** 20) });
    const res = await call(`/v1/runs/${run}/envs/${envIds[0]}/checkpoints/1`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: state,
    });
    expect(res.status).toBe(413);
    const text = await res.text();
    expect(text).toContain("checkpoint limit");
    expect(text).not.toContain("MAX_BODY_BYTES");
  });
});
