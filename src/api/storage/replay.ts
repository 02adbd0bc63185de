/**
 * The replay buffer's SQL: the run's settings (columns of `runs`), the candidates batch formation
 * mixes in, counting replays and adopting imported groups. Groups of acked batches are admitted
 * by the batch's own ack statement (its trigger, drizzle/0019).
 */
import { eq } from "drizzle-orm";
import { z } from "zod";
import type { ReplayCandidate } from "../../core/closed-loop/replay-mix";
import type { ReplayConfig, ReplayConfigRequest, ReplayStatus } from "../../core/wire/api-schemas";
import { allRows, rowsOf } from "./rows";
import { db, type RunRow } from "./runs";
import { runs } from "./schema";

export function replayConfigOf(row: RunRow): ReplayConfig {
  return {
    enabled: row.replayEnabled,
    threshold: row.replayThreshold,
    capacity: row.replayCapacity,
    max_replays: row.replayMaxReplays,
    fraction: row.replayFraction,
  };
}

/** Applies the changes; returns the settings after them, or null when the run does not exist. */
export async function updateReplayConfig(
  d1: D1Database,
  run: string,
  change: ReplayConfigRequest,
): Promise<ReplayConfig | null> {
  const set = {
    ...(change.enabled !== undefined ? { replayEnabled: change.enabled } : {}),
    ...(change.threshold !== undefined ? { replayThreshold: change.threshold } : {}),
    ...(change.capacity !== undefined ? { replayCapacity: change.capacity } : {}),
    ...(change.max_replays !== undefined ? { replayMaxReplays: change.max_replays } : {}),
    ...(change.fraction !== undefined ? { replayFraction: change.fraction } : {}),
    updatedAt: Date.now(),
  };
  const rows = await db(d1).update(runs).set(set).where(eq(runs.name, run)).returning();
  const row = rows[0];
  if (!row) return null;
  // A smaller capacity applies at once.
  await trimStatement(d1, run).run();
  return replayConfigOf(row);
}

export async function replayStatus(d1: D1Database, row: RunRow): Promise<ReplayStatus> {
  const [buffer, replayed] = await d1.batch([
    d1
      .prepare(
        "SELECT COUNT(*) AS n, COALESCE(SUM(MAX(?2 - replays, 0)), 0) AS left FROM replay_groups WHERE run = ?1",
      )
      .bind(row.name, row.replayMaxReplays),
    d1
      .prepare("SELECT COALESCE(SUM(replay_seqs), 0) AS s FROM batches WHERE run = ?1")
      .bind(row.name),
  ]);
  const [first] = rowsOf(buffer!, z.object({ n: z.number(), left: z.number() }));
  const [sum] = rowsOf(replayed!, z.object({ s: z.number() }));
  return {
    ...replayConfigOf(row),
    buffered_groups: first?.n ?? 0,
    replays_left: first?.left ?? 0,
    replayed_sequences: sum?.s ?? 0,
  };
}

const replayCandidateRow: z.ZodType<ReplayCandidate> = z.object({
  id: z.number(),
  size: z.number(),
  priority: z.number(),
});

/** Buffered groups a batch may replay now: replays left, within the staleness bound. */
export async function replayCandidates(
  d1: D1Database,
  run: string,
  maxReplays: number,
  minVersion: number | null,
  limit: number,
): Promise<ReplayCandidate[]> {
  const results = await allRows(
    d1
      .prepare(
        `SELECT r.group_id AS id, g.num_seqs AS size, r.priority AS priority
       FROM replay_groups r JOIN groups g ON g.id = r.group_id
       WHERE r.run = ?1 AND r.replays < ?2 AND g.policy_version >= ?3
       ORDER BY r.priority DESC, r.group_id LIMIT ?4`,
      )
      .bind(run, maxReplays, minVersion ?? Number.MIN_SAFE_INTEGER, limit),
    replayCandidateRow,
  );
  return results;
}

/** Counts one replay of each group; a group replayed its last time leaves the buffer. */
export function markReplayedStatements(
  d1: D1Database,
  run: string,
  ids: readonly number[],
  maxReplays: number,
): D1PreparedStatement[] {
  if (ids.length === 0) return [];
  return [
    d1
      .prepare(
        `UPDATE replay_groups SET replays = replays + 1
         WHERE run = ?1 AND group_id IN (SELECT value FROM json_each(?2))`,
      )
      .bind(run, JSON.stringify(ids)),
    d1.prepare("DELETE FROM replay_groups WHERE run = ?1 AND replays >= ?2").bind(run, maxReplays),
  ];
}

/** Drops the lowest priorities beyond the run's capacity. */
function trimStatement(d1: D1Database, run: string): D1PreparedStatement {
  return d1
    .prepare(
      `DELETE FROM replay_groups WHERE run = ?1 AND group_id IN (
         SELECT group_id FROM replay_groups WHERE run = ?1
         ORDER BY priority DESC, group_id DESC
         LIMIT -1 OFFSET COALESCE((SELECT replay_capacity FROM runs WHERE name = ?1), 0))`,
    )
    .bind(run);
}

/**
 * Adds imported groups (stored as delivered: the online queue never holds them) to the replay
 * buffer, priority = mean score (0 when unscored); returns how many of `ids` the buffer holds
 * after trimming to capacity. Groups that went out in a batch (online data) are not added, nor
 * ones adopted before (a retried import: the buffer may have trimmed or used them up since).
 */
export async function adoptIntoReplay(
  d1: D1Database,
  run: string,
  ids: readonly number[],
): Promise<number> {
  if (ids.length === 0) return 0;
  const list = JSON.stringify(ids);
  const now = Date.now();
  const results = await d1.batch([
    d1
      .prepare(
        `INSERT OR IGNORE INTO replay_groups (run, group_id, priority, replays, added_at)
         SELECT run, id, COALESCE(score_mean, 0), 0, ?3 FROM groups
         WHERE run = ?1 AND id IN (SELECT value FROM json_each(?2)) AND status = 'delivered'
           AND batch_id IS NULL AND replay_adopted_at IS NULL`,
      )
      .bind(run, list, now),
    d1
      .prepare(
        `UPDATE groups SET replay_adopted_at = ?3
         WHERE run = ?1 AND id IN (SELECT value FROM json_each(?2)) AND status = 'delivered'
           AND batch_id IS NULL AND replay_adopted_at IS NULL`,
      )
      .bind(run, list, now),
    trimStatement(d1, run),
    d1
      .prepare(
        `SELECT COUNT(*) AS n FROM replay_groups
         WHERE run = ?1 AND group_id IN (SELECT value FROM json_each(?2))`,
      )
      .bind(run, list),
  ]);
  return rowsOf(results[3]!, z.object({ n: z.number() }))[0]?.n ?? 0;
}
