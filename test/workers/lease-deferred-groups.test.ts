/**
 * A lease answers once its batch row (the lease, holding the group list) and the step are
 * written; its groups are marked leased, and its step's statistics written, in the coordinator's
 * next round trip, before any other transition of the run (drizzle/0022). When that round trip
 * fails, the next lease or ack marks them first: no group goes out twice, none stays queued.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { group, post, setupRun, uniqueRun } from "./helpers";

interface Leased {
  batch_id: string;
  lease_id: string;
  step: number;
  groups: { group_id: number }[];
}

async function groupRows(run: string) {
  const rows = await env.DB.prepare(
    "SELECT id, status, batch_id FROM groups WHERE run = ? ORDER BY id",
  )
    .bind(run)
    .all<{ id: number; status: string; batch_id: string | null }>();
  return rows.results;
}

async function statisticsSteps(run: string): Promise<number[]> {
  const rows = await env.DB.prepare(
    "SELECT DISTINCT step FROM batch_statistics WHERE run = ? ORDER BY step",
  )
    .bind(run)
    .all<{ step: number }>();
  return rows.results.map((r) => r.step);
}

async function lease(run: string): Promise<Leased> {
  const res = await post(`/v1/runs/${run}/batches/lease`, {});
  expect(res.status).toBe(200);
  return res.json<Leased>();
}

describe("a lease's groups, marked after its answer", () => {
  it("are leased to its batch, with its step's statistics, before the next request", async () => {
    const run = uniqueRun("defer");
    const { base, envIds } = await setupRun(run, 2, [2]);
    for (let i = 0; i < 3; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    const first = await lease(run);
    const rows = await groupRows(run);
    expect(rows.map((r) => [r.status, r.batch_id])).toEqual([
      ["leased", first.batch_id],
      ["queued", null],
      ["queued", null],
    ]);
    expect(await statisticsSteps(run)).toEqual([first.step]);
    const batch = await env.DB.prepare("SELECT groups_deferred FROM batches WHERE id = ?")
      .bind(first.batch_id)
      .first<{ groups_deferred: number }>();
    expect(batch?.groups_deferred).toBe(1);
  });

  it("when marking them failed, are marked by the next lease before it plans, and delivered by their ack", async () => {
    const run = uniqueRun("defer-fail");
    const { base, envIds } = await setupRun(run, 2, [2]);
    for (let i = 0; i < 4; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    const first = await lease(run);

    // The second lease is planned from memory and written without the statistics table; the
    // round trip after its answer (groups, statistics) fails on it.
    await env.DB.exec("ALTER TABLE batch_statistics RENAME TO batch_statistics_away");
    let second: Leased;
    try {
      second = await lease(run);
      expect(second.groups.map((g) => g.group_id)).not.toContain(first.groups[0]!.group_id);
      const stranded = (await groupRows(run)).find((r) => r.id === second.groups[0]!.group_id);
      expect(stranded).toMatchObject({ status: "queued", batch_id: null });
    } finally {
      await env.DB.exec("ALTER TABLE batch_statistics_away RENAME TO batch_statistics");
    }

    // The third lease marks the second's group first, so it is not handed out again.
    const third = await lease(run);
    const taken = [first, second, third].map((b) => b.groups.map((g) => g.group_id));
    expect(new Set(taken.flat()).size).toBe(3);
    const byId = new Map((await groupRows(run)).map((r) => [r.id, r]));
    expect(byId.get(second.groups[0]!.group_id)).toMatchObject({
      status: "leased",
      batch_id: second.batch_id,
    });

    // Its ack delivers it (the ack's trigger finds the group by the batch id).
    const ack = await post(`/v1/runs/${run}/batches/${second.batch_id}/ack`, {
      lease_id: second.lease_id,
    });
    expect(ack.status).toBe(200);
    expect(byId.size).toBe(4);
    expect((await groupRows(run)).map((r) => r.status)).toEqual([
      "leased",
      "delivered",
      "leased",
      "queued",
    ]);
    // The failed round trip's statistics are lost; every other step has its own.
    expect(await statisticsSteps(run)).toEqual([first.step, third.step]);
  });

  it("when marking them failed, are marked by the next ack before it delivers", async () => {
    const run = uniqueRun("defer-ack");
    const { base, envIds } = await setupRun(run, 2, [2]);
    for (let i = 0; i < 3; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    await lease(run);
    await env.DB.exec("ALTER TABLE batch_statistics RENAME TO batch_statistics_away");
    let second: Leased;
    try {
      second = await lease(run);
    } finally {
      await env.DB.exec("ALTER TABLE batch_statistics_away RENAME TO batch_statistics");
    }
    expect((await groupRows(run)).map((r) => r.status)).toEqual(["leased", "queued", "queued"]);
    const ack = await post(`/v1/runs/${run}/batches/${second.batch_id}/ack`, {
      lease_id: second.lease_id,
    });
    expect(ack.status).toBe(200);
    expect((await groupRows(run)).map((r) => r.status)).toEqual(["leased", "delivered", "queued"]);
  });

  it("left queued by a coordinator that stopped between its two writes, are marked by the next one's first lease", async () => {
    const run = uniqueRun("defer-restart");
    const { base, envIds } = await setupRun(run, 2, [2]);
    for (let i = 0; i < 3; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    const [oldest] = await groupRows(run);
    // What the first write of a lease leaves: the batch row and the step, the group still queued.
    const now = Date.now();
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO batches (id, run, step, status, consumer, lease_id, lease_expires_at,
           policy_version, num_groups, num_seqs, group_ids, created_at, groups_deferred)
         VALUES ('stopped', ?1, 1, 'leased', 'lease', 'stopped-lease', ?2, 0, 1, 2, ?3, ?4, 1)`,
      ).bind(run, now + 60_000, JSON.stringify([oldest!.id]), now),
      env.DB.prepare("UPDATE runs SET step = 1 WHERE name = ?1").bind(run),
    ]);
    const next = await lease(run);
    expect(next.step).toBe(2);
    expect(next.groups.map((g) => g.group_id)).not.toContain(oldest!.id);
    expect((await groupRows(run))[0]).toMatchObject({ status: "leased", batch_id: "stopped" });
    const ack = await post(`/v1/runs/${run}/batches/stopped/ack`, { lease_id: "stopped-lease" });
    expect(ack.status).toBe(200);
    expect((await groupRows(run))[0]).toMatchObject({ status: "delivered" });
  });

  it("serve each batch's own payloads when they were read with the queue head before", async () => {
    const run = uniqueRun("defer-prefix");
    const { base, envIds } = await setupRun(run, 4, [1, 2]);
    // Sizes whose oldest groups sometimes fill the batch exactly (read with the head) and
    // sometimes not (a later group is taken: read by the lease).
    const sizes = [2, 2, 2, 2, 2, 1, 2, 1, 1, 1, 2, 2];
    for (const [seed, size] of sizes.entries()) {
      const res = await post(`${base}/scored_data`, group(seed, size, envIds[size - 1]!));
      expect(res.status).toBe(200);
    }
    const seedOf = new Map((await groupRows(run)).map((r, seed) => [r.id, seed]));
    for (let i = 0; i < 4; i++) {
      const res = await post(`/v1/runs/${run}/batches/lease`, {});
      expect(res.status).toBe(200);
      const leased = await res.json<Leased & { batch: { tokens: number[][] }[] }>();
      const ids = leased.groups.map((g) => g.group_id);
      const row = await env.DB.prepare("SELECT group_ids FROM batches WHERE id = ?")
        .bind(leased.batch_id)
        .first<{ group_ids: string }>();
      expect(JSON.parse(row!.group_ids)).toEqual(ids);
      expect(leased.batch.map((g) => g.tokens)).toEqual(
        ids.map((id) => group(seedOf.get(id)!, sizes[seedOf.get(id)!]!, null).tokens),
      );
      const ack = await post(`/v1/runs/${run}/batches/${leased.batch_id}/ack`, {
        lease_id: leased.lease_id,
      });
      expect(ack.status).toBe(200);
    }
  });

  it("are marked before the next lease when a lease's first write committed but its answer was lost", async () => {
    const run = uniqueRun("defer-lost");
    const { base, envIds } = await setupRun(run, 2, [2]);
    for (let i = 0; i < 4; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    await lease(run);
    // The next D1 batch the coordinator sends (the next lease's first write) commits, and then
    // its answer is lost, as a dropped connection loses it.
    const namespace = (env as unknown as Bindings).RUN_COORDINATOR;
    const stub = namespace.get(namespace.idFromName(run));
    await runInDurableObject(stub, (instance) => {
      const real = env.DB;
      let lost = false;
      const lossy = {
        prepare: (query: string) => real.prepare(query),
        batch: async (statements: D1PreparedStatement[]) => {
          const results = await real.batch(statements);
          if (lost) return results;
          lost = true;
          throw new Error("D1_ERROR: Network connection lost.");
        },
      };
      Object.defineProperty(instance, "db", { value: lossy, configurable: true });
    });
    const failed = await post(`/v1/runs/${run}/batches/lease`, {});
    expect(failed.status).toBe(500);
    const written = await env.DB.prepare(
      "SELECT id, group_ids FROM batches WHERE run = ? ORDER BY step",
    )
      .bind(run)
      .all<{ id: string; group_ids: string }>();
    expect(written.results).toHaveLength(2);

    // The retry must not lease the lost lease's group again: it is marked first.
    const retry = await lease(run);
    const lostBatch = written.results[1]!;
    const lostIds = JSON.parse(lostBatch.group_ids) as number[];
    expect(retry.groups.map((g) => g.group_id)).not.toContain(lostIds[0]);
    const rows = new Map((await groupRows(run)).map((r) => [r.id, r]));
    expect(rows.get(lostIds[0]!)).toMatchObject({ status: "leased", batch_id: lostBatch.id });
  });
});
