/**
 * A batch row's triggers (drizzle/0019_batch_transitions.sql) lease its groups when it is formed
 * and deliver them when it is acked. A database without them (deployed without migrating) must
 * refuse to lease, ack or acknowledge, writing nothing, rather than hand the same groups out
 * again or leave them leased for good. The guard runs with every read a coordinator writes
 * after; what it plans from memory follows such a read in the same object.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, group, post, setupRun, uniqueRun } from "./helpers";

/** The statements that create trigger `name`, in migration order (a later one replaces it). */
function triggerVersions(name: string): string[] {
  return env.TEST_MIGRATIONS.flatMap((m) => m.queries).filter((q) =>
    q.includes(`CREATE TRIGGER ${name}`),
  );
}

/**
 * Runs `fn` with the trigger `name` dropped (or, given `replacement`, replaced by it), then
 * creates it again as the last migration does.
 */
async function withoutTrigger(
  name: string,
  fn: () => Promise<void>,
  replacement?: string,
): Promise<void> {
  const create = triggerVersions(name).at(-1);
  expect(create).toBeDefined();
  await env.DB.exec(`DROP TRIGGER ${name}`);
  if (replacement) await env.DB.prepare(replacement).run();
  try {
    await fn();
  } finally {
    if (replacement) await env.DB.exec(`DROP TRIGGER ${name}`);
    await env.DB.prepare(create!).run();
  }
}

async function batchStatuses(run: string): Promise<string[]> {
  const rows = await env.DB.prepare("SELECT status FROM batches WHERE run = ? ORDER BY step")
    .bind(run)
    .all<{ status: string }>();
  return rows.results.map((r) => r.status);
}

async function statuses(run: string): Promise<string[]> {
  const rows = await env.DB.prepare("SELECT status FROM groups WHERE run = ? ORDER BY id")
    .bind(run)
    .all<{ status: string }>();
  return rows.results.map((r) => r.status);
}

describe("batch triggers", () => {
  it("lease a batch's groups when it is formed and deliver them when it is acked", async () => {
    const run = uniqueRun("trig");
    const { base, envIds } = await setupRun(run, 2, [2]);
    for (let i = 0; i < 2; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    const res = await post(`/v1/runs/${run}/batches/lease`, {});
    expect(res.status).toBe(200);
    const { batch_id } = await res.json<{ batch_id: string }>();
    expect(await statuses(run)).toEqual(["leased", "queued"]);
    expect((await post(`/v1/runs/${run}/batches/${batch_id}/ack`, {})).status).toBe(200);
    expect(await statuses(run)).toEqual(["delivered", "queued"]);
  });

  it("refuse to lease without the migration that adds them, delivering nothing", async () => {
    const run = uniqueRun("notrig");
    const { base, envIds } = await setupRun(run, 2, [2]);
    await post(`${base}/scored_data`, group(0, 2, envIds[0]!));
    await withoutTrigger("batch_leases_groups", async () => {
      const res = await post(`/v1/runs/${run}/batches/lease`, {});
      expect(res.status).toBe(500);
      expect(await statuses(run)).toEqual(["queued"]);
      expect(await batchStatuses(run)).toEqual([]);
    });
    // With the trigger back, the group goes out once: in a batch of its own.
    const res = await post(`/v1/runs/${run}/batches/lease`, {});
    expect(res.status).toBe(200);
    expect(await statuses(run)).toEqual(["leased"]);
  });

  it("refuse to lease with the lease trigger of 0019 (without 0022), writing nothing", async () => {
    const run = uniqueRun("no0022");
    const { base, envIds } = await setupRun(run, 2, [2]);
    await post(`${base}/scored_data`, group(0, 2, envIds[0]!));
    const [before0022] = triggerVersions("batch_leases_groups");
    expect(before0022).not.toContain("groups_deferred");
    await withoutTrigger(
      "batch_leases_groups",
      async () => {
        const refused = await post(`/v1/runs/${run}/batches/lease`, {});
        expect(refused.status).toBe(500);
        expect(await refused.text()).toContain("0022_deferred_lease_groups");
        expect(await statuses(run)).toEqual(["queued"]);
        expect(await batchStatuses(run)).toEqual([]);
      },
      before0022,
    );
    expect((await post(`/v1/runs/${run}/batches/lease`, {})).status).toBe(200);
    expect(await statuses(run)).toEqual(["leased"]);
  });

  it("refuse to lease without batch_statistics (migration 0020), writing nothing", async () => {
    const run = uniqueRun("nostats");
    const { base, envIds } = await setupRun(run, 2, [2]);
    await post(`${base}/scored_data`, group(0, 2, envIds[0]!));
    await env.DB.exec("ALTER TABLE batch_statistics RENAME TO batch_statistics_away");
    try {
      const refused = await post(`/v1/runs/${run}/batches/lease`, {});
      expect(refused.status).toBe(500);
      // The guard's own words reach the client across the coordinator's RPC.
      expect(await refused.text()).toContain(
        "lacks migration 0019_batch_transitions, 0020_batch_statistics or 0022_deferred_lease_groups",
      );
      expect(await statuses(run)).toEqual(["queued"]);
      expect(await batchStatuses(run)).toEqual([]);
    } finally {
      await env.DB.exec("ALTER TABLE batch_statistics_away RENAME TO batch_statistics");
    }
    expect((await post(`/v1/runs/${run}/batches/lease`, {})).status).toBe(200);
    expect(await statuses(run)).toEqual(["leased"]);
  });

  it("refuse an ack and GET /batch's acknowledgement without it, writing nothing", async () => {
    const run = uniqueRun("noack");
    const { base, envIds } = await setupRun(run, 2, [2]);
    for (let i = 0; i < 3; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    const first = await (await post(`/v1/runs/${run}/batches/lease`, {})).json<{
      batch_id: string;
    }>();
    expect((await post(`/v1/runs/${run}/batches/lease`, {})).status).toBe(200);
    await withoutTrigger("batch_acked_delivers", async () => {
      // Not the batch the last lease formed: the ack reads its row first, guarded.
      expect((await post(`/v1/runs/${run}/batches/${first.batch_id}/ack`, {})).status).toBe(500);
      expect(await batchStatuses(run)).toEqual(["leased", "leased"]);
    });
    expect((await post(`/v1/runs/${run}/batches/${first.batch_id}/ack`, {})).status).toBe(200);
    expect(await statuses(run)).toEqual(["delivered", "leased", "queued"]);

    // GET /batch acknowledges the run's previous pull in its read.
    expect((await call(`${base}/batch`)).status).toBe(200);
    expect(await batchStatuses(run)).toEqual(["acked", "leased", "leased"]);
    // Another transition, so the next pull reads afresh instead of planning from memory.
    expect((await post(`/v1/runs/${run}/policy`, { version: 0 })).status).toBe(200);
    await withoutTrigger("batch_acked_delivers", async () => {
      expect((await call(`${base}/batch`)).status).toBe(500);
      expect(await batchStatuses(run)).toEqual(["acked", "leased", "leased"]);
    });
  });
});
