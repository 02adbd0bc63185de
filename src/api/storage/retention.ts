/**
 * The statements of retention (src/api/retention.ts): delivered, acked groups past their time go,
 * except those the replay buffer keeps.
 * Raw SQL: `DELETE … RETURNING` over a join with a limit, and `json_each` over the leased
 * batches' replay lists, which drizzle's builder cannot say.
 */
import { z } from "zod";
import { allRows, firstRow, rowsOf } from "./rows";

/** Groups retention keeps: in the replay buffer, or replayed in a batch still leased. */
const KEPT_FOR_REPLAY = `
    AND g.id NOT IN (SELECT group_id FROM replay_groups WHERE run = ?1)
    AND g.id NOT IN (SELECT j.value FROM batches lb, json_each(lb.replay_ids) j
      WHERE lb.run = ?1 AND lb.status = 'leased' AND lb.replay_ids IS NOT NULL)`;

const DELETE_EXPIRED = `
DELETE FROM groups WHERE id IN (
  SELECT g.id FROM groups g JOIN batches b ON b.id = g.batch_id
  WHERE g.run = ?1 AND g.status = 'delivered' AND b.status = 'acked' AND b.acked_at <= ?2
    ${KEPT_FOR_REPLAY}
  ORDER BY g.id LIMIT ?3)
RETURNING id, payload_key, payload_bytes`;

const STILL_REFERENCED = `
SELECT DISTINCT payload_key FROM groups
WHERE payload_key IN (SELECT value FROM json_each(?1))`;

const FIRST_EXPIRING = `
SELECT MIN(b.acked_at) AS at FROM groups g JOIN batches b ON b.id = g.batch_id
WHERE g.run = ?1 AND g.status = 'delivered' AND b.status = 'acked' ${KEPT_FOR_REPLAY}`;

export interface ExpiredGroup {
  id: number;
  payloadKey: string;
  payloadBytes: number;
}

/** Deletes up to `limit` of the run's groups whose batch was acked at or before `ackedBy`. */
export async function deleteExpiredGroups(
  d1: D1Database,
  run: string,
  ackedBy: number,
  limit: number,
): Promise<ExpiredGroup[]> {
  const deleted = await d1.prepare(DELETE_EXPIRED).bind(run, ackedBy, limit).all();
  return rowsOf(
    deleted,
    z.object({ id: z.number(), payload_key: z.string(), payload_bytes: z.number() }),
  ).map((r) => ({ id: r.id, payloadKey: r.payload_key, payloadBytes: r.payload_bytes }));
}

/** Those of `keys` some group still references. */
export async function referencedPayloadKeys(
  d1: D1Database,
  keys: readonly string[],
): Promise<string[]> {
  const rows = await allRows(
    d1.prepare(STILL_REFERENCED).bind(JSON.stringify(keys)),
    z.object({ payload_key: z.string() }),
  );
  return rows.map((r) => r.payload_key);
}

/** When the first batch holding an expirable group of the run was acked, or null if none. */
export async function firstExpiringAck(d1: D1Database, run: string): Promise<number | null> {
  const row = await firstRow(
    d1.prepare(FIRST_EXPIRING).bind(run),
    z.object({ at: z.number().nullable() }),
  );
  return row?.at ?? null;
}
