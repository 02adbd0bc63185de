import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, group, json, post, setupRun, uniqueRun } from "./helpers";

const blocked = async (run: string) =>
  (await json<{ blocked_reason: string | null }>(call(`/v1/runs/${run}/stats`))).blocked_reason;

describe("/stats blocked_reason", () => {
  it("follows ingest and leases, and is reused while the queue's counts stay the same", async () => {
    const run = uniqueRun("diag");
    const { base, envIds } = await setupRun(run, 8, [4]);
    expect(await blocked(run)).toContain("0 batchable sequence(s) queued");
    expect((await post(`${base}/scored_data`, group(1, 4, envIds[0]!))).status).toBe(200);
    expect(await blocked(run)).toContain("4 batchable sequence(s) queued, batch_size is 8");

    // Changing a queued group's size behind the API leaves the queue's counts as they were, so
    // the last answer is reused rather than planned again (a fresh plan would see 9 sequences).
    await env.DB.prepare("UPDATE groups SET num_seqs = 9 WHERE run = ?1").bind(run).run();
    expect(await blocked(run)).toContain("4 batchable sequence(s) queued");
    await env.DB.prepare("UPDATE groups SET num_seqs = 4 WHERE run = ?1").bind(run).run();

    expect((await post(`${base}/scored_data`, group(2, 4, envIds[0]!))).status).toBe(200);
    expect(await blocked(run)).toBeNull();
    const leased = await post(`/v1/runs/${run}/batches/lease`, {});
    expect(leased.status).toBe(200);
    await leased.arrayBuffer();
    expect(await blocked(run)).toContain("0 batchable sequence(s) queued");
  });
});
