/**
 * A batch row's triggers (drizzle/0019_batch_transitions.sql) lease its groups when it is formed
 * and deliver them when it is acked. A database without them must refuse to lease, writing
 * nothing, rather than hand the same groups out again.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { group, post, setupRun, uniqueRun } from "./helpers";

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
    const create = env.TEST_MIGRATIONS.flatMap((m) => m.queries).find((q) =>
      q.includes("CREATE TRIGGER batch_leases_groups"),
    );
    expect(create).toBeDefined();
    await env.DB.exec("DROP TRIGGER batch_leases_groups");
    try {
      const res = await post(`/v1/runs/${run}/batches/lease`, {});
      expect(res.status).toBe(500);
      expect(await statuses(run)).toEqual(["queued"]);
      const batches = await env.DB.prepare("SELECT COUNT(*) AS n FROM batches WHERE run = ?")
        .bind(run)
        .first<{ n: number }>();
      expect(batches?.n).toBe(0);
    } finally {
      await env.DB.prepare(create!).run();
    }
    // With the trigger back, the group goes out once: in a batch of its own.
    const res = await post(`/v1/runs/${run}/batches/lease`, {});
    expect(res.status).toBe(200);
    expect(await statuses(run)).toEqual(["leased"]);
  });
});
