/**
 * Retention: groups a trainer has acknowledged (status 'delivered', their batch acked) are removed
 * RETENTION_HOURS after the ack, with their payloads. Queued, buffered and leased groups, groups
 * in the replay buffer and groups replayed in a batch still leased are never touched. Group
 * commit stores several groups in one R2 object, so an object is deleted only when no row
 * references it any more.
 * A removed group's trajectories and token texts go with it. Unset (or 0) keeps everything forever.
 */
import { type Bindings, numberVar } from "./bindings";
import { deleteInlinePayloads } from "./storage/payloads";
import { deleteGroupTokenTexts } from "./storage/token-texts";
import { deleteGroupTrajectories } from "./storage/trajectories";

/** Retention in ms, or null to keep delivered groups forever. */
export function retentionMs(env: Bindings): number | null {
  const hours = numberVar(env.RETENTION_HOURS, 0);
  return hours > 0 ? hours * 3_600_000 : null;
}

export interface CollectedGarbage {
  groups: number;
  bytes: number;
  /** R2 objects deleted (an object shared with kept groups stays). */
  objects: number;
  /** More expired groups remain than one pass removes. */
  more: boolean;
}

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

/** Removes up to `limit` groups of `run` delivered before `now - retention`, and orphaned payloads. */
export async function collectGarbage(
  env: Bindings,
  run: string,
  retention: number,
  now = Date.now(),
  limit = 500,
): Promise<CollectedGarbage> {
  const { results } = await env.DB.prepare(DELETE_EXPIRED)
    .bind(run, now - retention, limit)
    .all<{ id: number; payload_key: string; payload_bytes: number }>();
  if (results.length > 0) {
    const ids = results.map((r) => r.id);
    await deleteGroupTrajectories(env.DB, run, ids).run();
    await deleteGroupTokenTexts(env.DB, run, ids).run();
    await deleteInlinePayloads(env.DB, ids).run();
  }
  // Inline payloads (key "") are gone with them; R2 objects may be shared with kept groups.
  const keys = [...new Set(results.map((r) => r.payload_key))].filter((k) => k !== "");
  let orphans: string[] = [];
  if (keys.length > 0) {
    const kept = await env.DB.prepare(STILL_REFERENCED)
      .bind(JSON.stringify(keys))
      .all<{ payload_key: string }>();
    const referenced = new Set(kept.results.map((r) => r.payload_key));
    orphans = keys.filter((k) => !referenced.has(k));
    // R2 deletes up to 1000 keys per call.
    for (let i = 0; i < orphans.length; i += 1000) {
      await env.PAYLOADS.delete(orphans.slice(i, i + 1000));
    }
  }
  return {
    groups: results.length,
    bytes: results.reduce((sum, r) => sum + r.payload_bytes, 0),
    objects: orphans.length,
    more: results.length >= limit,
  };
}

/** When the next delivered group of the run expires (ms since the epoch), or null if none. */
export async function nextExpiry(
  env: Bindings,
  run: string,
  retention: number,
): Promise<number | null> {
  const row = await env.DB.prepare(
    `SELECT MIN(b.acked_at) AS at FROM groups g JOIN batches b ON b.id = g.batch_id
     WHERE g.run = ?1 AND g.status = 'delivered' AND b.status = 'acked' ${KEPT_FOR_REPLAY}`,
  )
    .bind(run)
    .first<{ at: number | null }>();
  return row?.at == null ? null : row.at + retention;
}
