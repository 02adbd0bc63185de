/**
 * Retention: delivered groups and their payloads go RETENTION_HOURS after their ack; an R2 object
 * shared by several groups (group commit) stays until the last of them goes; undelivered groups
 * are never touched; the run's stats say what is kept.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { collectGarbage } from "../../src/api/retention";
import type { RunCoordinator } from "../../src/api/run-coordinator";
import { call, callWith, group, json, post, setupRun, uniqueRun } from "./helpers";

const bindings = env as unknown as Bindings;
const HOUR = 3_600_000;
/** Sequence length that makes a group of two too large for D1 even compressed (it goes to R2). */
const LARGE = 20_000;

async function leaseAndAck(run: string): Promise<number[]> {
  const leased = await json<{ batch_id: string; groups: { group_id: number }[] }>(
    post(`/v1/runs/${run}/batches/lease`, {}),
  );
  const ack = await post(`/v1/runs/${run}/batches/${leased.batch_id}/ack`, {});
  expect(ack.status).toBe(200);
  return leased.groups.map((g) => g.group_id);
}

async function payloadKeys(run: string): Promise<string[]> {
  const listed = await bindings.PAYLOADS.list({ prefix: `runs/${run}/` });
  return listed.objects.map((o) => o.key).sort();
}

async function groupIds(run: string): Promise<number[]> {
  const { results } = await bindings.DB.prepare("SELECT id FROM groups WHERE run = ?1 ORDER BY id")
    .bind(run)
    .all<{ id: number }>();
  return results.map((r) => r.id);
}

describe("retention", () => {
  it("removes delivered groups after the retention time, and a shared payload only when unreferenced", async () => {
    const run = uniqueRun("retain");
    // Batches of one group of two sequences, each group too large to be stored inline.
    const { base, envIds } = await setupRun(run, 2, [2], { maxTokenLen: LARGE });
    const envId = envIds[0]!;
    const large = (seed: number) => group(seed, 2, envId, LARGE);
    // One request, one commit: both groups in ONE R2 object.
    const list = await post(`${base}/scored_data_list`, [large(1), large(2)]);
    expect(list.status).toBe(200);
    const trajectory = (sequence: number) => ({
      task: "t",
      steps: [],
      final_response: null,
      success: null,
      judge_score: null,
      token_count: 6,
      wall_time_ms: 1,
      sequence,
      source: "env",
    });
    await post(`${base}/scored_data`, { ...large(3), trajectories: [trajectory(0)] });
    const shared = await payloadKeys(run);
    expect(shared).toHaveLength(2);
    const all = await groupIds(run);

    const first = await leaseAndAck(run);
    expect(first).toEqual([all[0]]);
    // Not yet expired: nothing goes.
    expect(await collectGarbage(bindings, run, HOUR)).toMatchObject({ groups: 0, objects: 0 });

    const later = Date.now() + 2 * HOUR;
    const one = await collectGarbage(bindings, run, HOUR, later);
    expect(one).toMatchObject({ groups: 1, objects: 0, more: false });
    expect(one.bytes).toBeGreaterThan(0);
    expect(await groupIds(run)).toEqual(all.slice(1));
    // Its object still holds the second group, which still reads back whole.
    expect(await payloadKeys(run)).toEqual(shared);
    const second = await call(`/v1/runs/${run}/groups/${all[1]}`);
    expect(second.status).toBe(200);
    expect(((await second.json()) as { payload: { tokens: number[][] } }).payload.tokens).toEqual(
      large(2).tokens,
    );

    expect(await leaseAndAck(run)).toEqual([all[1]]);
    const two = await collectGarbage(bindings, run, HOUR, later);
    expect(two).toMatchObject({ groups: 1, objects: 1 });
    // The shared object is gone; the queued group and its own object are untouched.
    expect(await groupIds(run)).toEqual([all[2]]);
    expect(await payloadKeys(run)).toHaveLength(1);
    // The kept group keeps its trajectory; a collected group's trajectories go with it.
    const kept = await json<{ trajectories: unknown[] }>(
      call(`/v1/runs/${run}/groups/${all[2]}/trajectories`),
    );
    expect(kept.trajectories).toHaveLength(1);
    expect((await call(`/v1/runs/${run}/groups/${all[2]}`)).status).toBe(200);

    const stats = await json<{ retention: Record<string, unknown> }>(
      callWith({ RETENTION_HOURS: "24" }, `/v1/runs/${run}/stats`),
    );
    expect(stats.retention).toMatchObject({ hours: 24, kept_groups: 1, delivered_groups: 0 });
    expect(stats.retention.kept_bytes).toBeGreaterThan(0);
    const forever = await json<{ retention: { hours: number | null } }>(
      call(`/v1/runs/${run}/stats`),
    );
    expect(forever.retention.hours).toBeNull();

    expect(await leaseAndAck(run)).toEqual([all[2]]);
    expect(await collectGarbage(bindings, run, HOUR, later)).toMatchObject({ groups: 1 });
    const left = await bindings.DB.prepare("SELECT COUNT(*) AS n FROM trajectories WHERE run = ?1")
      .bind(run)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
  });

  it("removes a small group stored inline with its row (it never had an R2 object)", async () => {
    const run = uniqueRun("retain-inline");
    const { base, envIds } = await setupRun(run, 2, [2]);
    expect((await post(`${base}/scored_data`, group(1, 2, envIds[0]!))).status).toBe(200);
    expect(await payloadKeys(run)).toEqual([]);
    await leaseAndAck(run);
    const collected = await collectGarbage(bindings, run, HOUR, Date.now() + 2 * HOUR);
    expect(collected).toMatchObject({ groups: 1, objects: 0 });
    expect(collected.bytes).toBeGreaterThan(0);
    expect(await groupIds(run)).toEqual([]);
  });

  it("keeps groups in the replay buffer, and replayed groups of a batch still leased", async () => {
    const run = uniqueRun("retain-replay");
    const { base, envIds } = await setupRun(run, 2, [1]);
    const envId = envIds[0]!;
    const replay = await call(`/v1/runs/${run}/replay`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ enabled: true, fraction: 0.5, threshold: 0.5 }),
    });
    expect(replay.status).toBe(200);
    // One-sequence groups scored 1 (kept for replay) and 0 (not kept).
    const one = (seed: number, score: number) => ({ ...group(seed, 1, envId), scores: [score] });
    await post(`${base}/scored_data`, one(1, 1));
    await post(`${base}/scored_data`, one(2, 0));
    const [kept, dropped] = await leaseAndAck(run);
    const later = Date.now() + 2 * HOUR;
    expect(await collectGarbage(bindings, run, HOUR, later)).toMatchObject({ groups: 1 });
    expect(await groupIds(run)).toEqual([kept]);
    expect(dropped).toBeDefined();

    // Replayed once (its last time, so it leaves the buffer) in a batch not yet acked: kept.
    await post(`${base}/scored_data`, one(3, 0));
    const leased = await json<{
      batch_id: string;
      groups: { group_id: number; replayed: boolean }[];
    }>(post(`/v1/runs/${run}/batches/lease`, {}));
    expect(leased.groups.find((g) => g.replayed)?.group_id).toBe(kept);
    expect(await json(call(`/v1/runs/${run}/replay`))).toMatchObject({ buffered_groups: 0 });
    expect(await collectGarbage(bindings, run, HOUR, later)).toMatchObject({ groups: 0 });
    expect(await groupIds(run)).toContain(kept);
    // Once acked, it goes like any delivered group.
    await post(`/v1/runs/${run}/batches/${leased.batch_id}/ack`, {});
    await collectGarbage(bindings, run, HOUR, Date.now() + 2 * HOUR);
    expect(await groupIds(run)).not.toContain(kept);
  });

  it("is run by the run coordinator's alarm, set by an ack", async () => {
    const run = uniqueRun("retain-alarm");
    const { base, envIds } = await setupRun(run, 2, [2]);
    await post(`${base}/scored_data`, group(1, 2, envIds[0]!));
    const leased = await json<{ batch_id: string }>(post(`/v1/runs/${run}/batches/lease`, {}));
    const stub = bindings.RUN_COORDINATOR.get(bindings.RUN_COORDINATOR.idFromName(run));
    await runInDurableObject(stub, async (object, state) => {
      const instance = object as unknown as RunCoordinator;
      // This object alone gets a retention of ~4 ms (the test config keeps everything).
      Reflect.set(instance, "env", { ...bindings, RETENTION_HOURS: String(4 / HOUR) });
      expect(await state.storage.getAlarm()).toBeNull();
      await instance.ack(run, leased.batch_id, undefined, null);
      expect(await state.storage.getAlarm()).not.toBeNull();
    });
    // The alarm may fire on its own first; otherwise run it.
    for (let i = 0; (await groupIds(run)).length > 0; i++) {
      if (i > 100) throw new Error("the retention alarm never removed the delivered group");
      await new Promise((r) => setTimeout(r, 20));
      await runDurableObjectAlarm(stub);
    }
    expect(await payloadKeys(run)).toEqual([]);
  });
});
