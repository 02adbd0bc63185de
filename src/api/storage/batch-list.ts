/**
 * Reads of GET /v1/runs/{run}/batches: a page of batches by step, and the groups they hold.
 * Raw SQL: rows come back under the API's own names (`batch_id`, `policy_version_at_formation`),
 * and the groups are looked up by a bound JSON list (`json_each`; D1 caps bound parameters at 100),
 * which drizzle's builder cannot say.
 */
import { z } from "zod";
import { batchRowSchema } from "../../core/wire/api-schemas";
import { allRows } from "./rows";

const batchListRowSchema = batchRowSchema.omit({ groups: true, replayed_groups: true }).extend({
  /** JSON list of the batch's group ids. */
  group_ids: z.string(),
  /** JSON list of the ids of groups that were replays (null: none). */
  replay_ids: z.string().nullable(),
});
export type BatchListRow = z.infer<typeof batchListRowSchema>;

const batchGroupRowSchema = batchRowSchema.shape.groups.element.omit({ replayed: true });
export type BatchGroupRow = z.infer<typeof batchGroupRowSchema>;

/** Up to `limit` of the run's batches below step `before`, newest step first. */
export async function listBatchRows(
  d1: D1Database,
  run: string,
  before: number,
  limit: number,
): Promise<BatchListRow[]> {
  return allRows(
    d1
      .prepare(
        `SELECT id AS batch_id, step, status, num_groups, num_seqs, created_at, lease_expires_at, acked_at,
       max_staleness, policy_version AS policy_version_at_formation, group_ids, replay_ids
     FROM batches WHERE run = ?1 AND step < ?2 ORDER BY step DESC LIMIT ?3`,
      )
      .bind(run, before, limit),
    batchListRowSchema,
  );
}

/** The groups with these ids that still exist (retention may have removed some). */
export async function batchGroupRows(
  d1: D1Database,
  ids: readonly number[],
): Promise<BatchGroupRow[]> {
  return allRows(
    d1
      .prepare(
        "SELECT id, env_id, policy_version, num_seqs FROM groups WHERE id IN (SELECT value FROM json_each(?1))",
      )
      .bind(JSON.stringify(ids)),
    batchGroupRowSchema,
  );
}
