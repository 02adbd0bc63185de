/**
 * Reads of GET /v1/runs/{run}/batches: a page of batches by step, and the groups they hold.
 * Raw SQL: rows come back under the API's own names (`batch_id`, `policy_version_at_formation`),
 * and the groups are looked up by a bound JSON list (`json_each`; D1 caps bound parameters at 100),
 * which drizzle's builder cannot say.
 */
import type { BatchRow } from "../../core/api-schemas";

export type BatchListRow = Omit<BatchRow, "groups" | "replayed_groups"> & {
  group_ids: string;
  /** JSON list of the ids of groups that were replays (null: none). */
  replay_ids: string | null;
};
export type BatchGroupRow = Omit<BatchRow["groups"][number], "replayed">;

/** Up to `limit` of the run's batches below step `before`, newest step first. */
export async function listBatchRows(
  d1: D1Database,
  run: string,
  before: number,
  limit: number,
): Promise<BatchListRow[]> {
  const { results } = await d1
    .prepare(
      `SELECT id AS batch_id, step, status, num_groups, num_seqs, created_at, lease_expires_at, acked_at,
       max_staleness, policy_version AS policy_version_at_formation, group_ids, replay_ids
     FROM batches WHERE run = ?1 AND step < ?2 ORDER BY step DESC LIMIT ?3`,
    )
    .bind(run, before, limit)
    .all<BatchListRow>();
  return results;
}

/** The groups with these ids that still exist (retention may have removed some). */
export async function batchGroupRows(
  d1: D1Database,
  ids: readonly number[],
): Promise<BatchGroupRow[]> {
  const { results } = await d1
    .prepare(
      "SELECT id, env_id, policy_version, num_seqs FROM groups WHERE id IN (SELECT value FROM json_each(?1))",
    )
    .bind(JSON.stringify(ids))
    .all<BatchGroupRow>();
  return results;
}
