/**
 * Group commit on the real local runtime: concurrent submissions share one R2 object and one D1
 * transaction, each request still gets its own answer, and every group is delivered intact from
 * its byte range of the shared object.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { call, group, post, setupRun, uniqueRun } from "./helpers";

const bindings = env as unknown as Bindings;

async function objectsUnder(prefix: string): Promise<number> {
  return (await bindings.PAYLOADS.list({ prefix })).objects.length;
}

describe("group commit", () => {
  it("writes concurrent submissions together, answers each one, and delivers each group intact", async () => {
    const run = uniqueRun("commit");
    const { base, envIds } = await setupRun(run, 48, [4], { maxTokenLen: 16_384 });
    // Groups too large to be kept in D1 even compressed, so their payloads go to R2.
    const groups = Array.from({ length: 12 }, (_, i) => group(7000 + i, 4, envIds[0]!, 12_000 + i));
    const responses = await Promise.all([
      ...groups.map((g) => post(`${base}/scored_data`, g)),
      post(`${base}/scored_data`, group(7999, 4, 99)), // unknown env in the same burst
      post(`${base}/scored_data`, groups[3]), // a retry of one of them, concurrently
    ]);
    const statuses = responses.map((r) => r.status);
    expect(statuses.slice(0, 12)).toEqual(Array(12).fill(200));
    expect(statuses[12]).toBe(422);
    expect(await responses[12]!.json()).toMatchObject({
      error: { message: expect.stringContaining("env_id 99 is not registered") },
    });
    expect(statuses[13]).toBe(200);

    const shared = responses
      .map((r) => /desc="(\d+) groups? from (\d+) requests?"/.exec(r.headers.get("server-timing")!))
      .filter((m) => m !== null)
      .map((m) => Number(m[2]));
    expect(Math.max(...shared)).toBeGreaterThan(1);
    // Fewer objects than groups: payloads were written together.
    const objects = await objectsUnder(`runs/${run}/groups/`);
    expect(objects).toBeGreaterThan(0);
    expect(objects).toBeLessThan(12);

    const queue = await (await call(`${base}/status`)).json<{ queue_size: number }>();
    expect(queue.queue_size).toBe(12); // the concurrent retry was not stored twice

    const lease = await post(`/v1/runs/${run}/batches/lease`, {});
    expect(lease.status).toBe(200);
    const batch = (await lease.json<{ batch: { tokens: number[][]; masks: number[][] }[] }>())
      .batch;
    const byFirstToken = new Map(batch.map((g) => [g.tokens[0]![0]!, g]));
    for (const g of groups) {
      const delivered = byFirstToken.get(g.tokens[0]![0]!);
      expect(delivered?.tokens).toEqual(g.tokens);
      expect(delivered?.masks).toEqual(g.masks);
    }
  });
});
