/**
 * The fragment every dedupe lookup on groups is built from (`storedCopy`: the insert's retry
 * check, the retry's answer, token texts and trajectories beside a group) finds the
 * submission's copy by its dedupe key, not by scanning the groups of the dedupe window, on the
 * migrated local D1.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { storedCopy } from "../../src/api/storage/groups";

const bindings = env as unknown as Bindings;

async function planOf(sql: string): Promise<string> {
  const { results } = await bindings.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind("run", "key", 0)
    .all<{ detail: string }>();
  return results.map((row) => row.detail).join("\n");
}

describe("the dedupe lookup", () => {
  it("searches the (run, dedupe_key) index, not the window's range of created_at", async () => {
    const plan = await planOf(
      `SELECT id FROM groups WHERE ${storedCopy(2, 3)} ORDER BY id LIMIT 1`,
    );
    expect(plan).toMatch(/USING (COVERING )?INDEX groups_dedupe \(run=\? AND dedupe_key=\?\)/);
    expect(plan).not.toContain("groups_by_time");
  });

  it("canary: without the hint, this SQLite plans the lookup on created_at (a red here after an upgrade means the hint may no longer be needed, not that the code is wrong)", async () => {
    const plan = await planOf(
      "SELECT id FROM groups WHERE run = ?1 AND dedupe_key = ?2 AND created_at > ?3 ORDER BY id LIMIT 1",
    );
    expect(plan).toContain("groups_by_time");
  });
});
