/**
 * Groups set aside as stale: queued groups sampled under a policy older than a lease's bound.
 * Policy versions only move forward (a reset excepted), so such a group can never be delivered
 * within that bound; moving it to status 'stale' takes it out of queue_counts (the triggers
 * count only buffered and queued groups), which /status-env and the envs' throttling read.
 */
import { and, count, eq } from "drizzle-orm";
import { db } from "./runs";
import { groups } from "./schema";

/** Moves queued groups older than `minVersion` to 'stale' (for a batch of statements). */
export function evictStaleStatement(
  d1: D1Database,
  run: string,
  minVersion: number,
): D1PreparedStatement {
  return d1
    .prepare(
      "UPDATE groups SET status = 'stale' WHERE run = ?1 AND status = 'queued' AND policy_version < ?2",
    )
    .bind(run, minVersion);
}

/** Moves queued groups older than `minVersion` to 'stale'; returns how many moved. */
export async function evictStale(d1: D1Database, run: string, minVersion: number): Promise<number> {
  // Counted from RETURNING: meta.changes includes the queue_counts triggers' rows.
  const { results } = await d1
    .prepare(
      "UPDATE groups SET status = 'stale' WHERE run = ?1 AND status = 'queued' AND policy_version < ?2 RETURNING id",
    )
    .bind(run, minVersion)
    .all();
  return results.length;
}

export async function staleCount(d1: D1Database, run: string): Promise<number> {
  const rows = await db(d1)
    .select({ n: count() })
    .from(groups)
    .where(and(eq(groups.run, run), eq(groups.status, "stale")));
  return rows[0]?.n ?? 0;
}

/** After a policy reset to an older version, stale groups may be fresh again: queue them. */
export function requeueStale(d1: D1Database, run: string): D1PreparedStatement {
  return d1
    .prepare(
      "UPDATE groups SET status = 'queued', queued_at = ?2 WHERE run = ?1 AND status = 'stale'",
    )
    .bind(run, Date.now());
}

/**
 * Queues again the stale groups a lease's bound accepts (a wider max_staleness than the one that
 * set them aside, or none); returns how many.
 */
export async function requeueAccepted(
  d1: D1Database,
  run: string,
  minVersion: number | null,
): Promise<number> {
  const { results } = await d1
    .prepare(
      "UPDATE groups SET status = 'queued', queued_at = ?3 WHERE run = ?1 AND status = 'stale' AND policy_version >= ?2 RETURNING id",
    )
    .bind(run, minVersion ?? Number.MIN_SAFE_INTEGER, Date.now())
    .all();
  return results.length;
}
