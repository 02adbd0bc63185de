/**
 * The SQL of storing a submitted group (src/api/ingest.ts decides what to store and when): one
 * conditional insert that dedupes retries, picks buffered or queued and stamps the policy version;
 * the payload kept in D1 beside the row; the queue item's idempotency key; the env's heartbeat;
 * and the reads that tell a retry from an unknown env.
 */
import { z } from "zod";
import type { GroupStats } from "../../core/wire/group-stats";
import { firstRow, rowsOf } from "./rows";

/** What one group's insert writes. */
export interface GroupInsert {
  envId: number | null;
  stats: GroupStats;
  scoresJson: string;
  /** null: the run's current version. */
  policyVersion: number | null;
  /** "" when the payload is kept in D1 (`inline`). */
  payloadKey: string;
  payloadOffset: number;
  payloadBytes: number;
  encoding: "canonical" | "deflate";
  raw: { length: number; crc32: number } | null;
  inline: string | null;
  dedupeKey: string;
  idempotencyKey: string | null;
  tokenId: string | null;
  now: number;
  /** A stored submission with this dedupe key created after this is what this one retries. */
  dedupeCutoff: number;
  /** Offline data for the replay buffer: stored as delivered, never queued. */
  offline: boolean;
  /**
   * The run's limits, checked for the whole submission this group came with, so that the groups
   * of a list are all stored or none: its longest sequence (within max_token_len) and the env
   * ids its groups name (all registered), as a JSON array.
   */
  submission: { longestSeq: number; envIdsJson: string };
}

/**
 * Where a submission with dedupe key ?{key} was stored after ?{cutoff}: looked up by the
 * (run, dedupe_key) index. The `+` keeps SQLite off the (run, created_at) index, which it
 * prefers without statistics and whose range holds every group of the dedupe window, so each
 * lookup read more rows the faster groups came in (0.14 ms at 1,000 groups; 120 s of ingest at
 * 200 groups/s is 24,000). Every lookup of a copy within the dedupe window uses this.
 */
export function storedCopy(key: number, cutoff: number): string {
  return `run = ?1 AND dedupe_key = ?${key} AND +created_at > ?${cutoff}`;
}

const INSERT_GROUP = `
INSERT INTO groups (run, env_id, status, num_seqs, total_tokens, completion_tokens, score_mean,
  score_min, score_max, scores_json, policy_version, payload_key, payload_encoding, payload_bytes,
  dedupe_key, created_at, queued_at, payload_offset, token_id, raw_bytes, raw_crc32)
SELECT ?1, ?2,
  CASE WHEN ?22 THEN 'delivered'
    WHEN ?2 IS NOT NULL AND ?3 < (SELECT group_size FROM envs WHERE run = ?1 AND env_id = ?2)
    THEN 'buffered' ELSE 'queued' END,
  ?3, ?4, ?5, ?6, ?7, ?8, ?9,
  COALESCE(?10, (SELECT policy_version FROM runs WHERE name = ?1), 0),
  ?11, ?19, ?12, ?17, ?13, ?13, ?16, ?18, ?20, ?21
WHERE (?2 IS NULL OR EXISTS (SELECT 1 FROM envs WHERE run = ?1 AND env_id = ?2))
  AND COALESCE((SELECT max_token_len < 0 OR ?23 <= max_token_len FROM runs WHERE name = ?1), 1)
  AND (SELECT COUNT(*) FROM envs WHERE run = ?1 AND env_id IN (SELECT value FROM json_each(?24)))
    = json_array_length(?24)
  AND NOT EXISTS (SELECT 1 FROM groups WHERE ${storedCopy(17, 14)})
  AND (?15 IS NULL OR NOT EXISTS (SELECT 1 FROM idempotency_keys WHERE run = ?1 AND key = ?15))
RETURNING id, status`;

// Right after INSERT_GROUP: the group it just inserted, if it inserted one (a retry inserts none).
const INSERT_INLINE_PAYLOAD = `
INSERT INTO group_payloads (group_id, run, body)
SELECT last_insert_rowid(), ?1, ?2 WHERE changes() = 1`;

// Only for a stored group (this insert's or an earlier copy's): a refused item is not a used key.
const RECORD_ITEM_KEY = `
INSERT INTO idempotency_keys (run, key, route, request_hash, status_code, response, created_at)
SELECT ?1, ?2, 'queue', ?3, 200, json_object('group_id', id), ?4
FROM groups WHERE run = ?1 AND dedupe_key = ?3 ORDER BY id DESC LIMIT 1
ON CONFLICT (run, key) DO NOTHING`;

// Heartbeat: a stored submission proves the env is alive; written at most every 5 s per env.
// A commit's groups are created at its `now`: a commit that stored none of the env's touches nothing.
const TOUCH_ENV = `UPDATE envs SET last_seen_at = ?3 WHERE run = ?1 AND env_id = ?2 AND last_seen_at < ?3 - 5000
  AND EXISTS (SELECT 1 FROM groups WHERE run = ?1 AND created_at = ?3 AND env_id = ?2)`;

/**
 * The statements storing one group, in order (the first is the group's insert, which returns
 * its id and status, or nothing for a retry or an unknown env).
 */
export function groupInsertStatements(
  d1: D1Database,
  run: string,
  g: GroupInsert,
): D1PreparedStatement[] {
  const statements = [
    d1
      .prepare(INSERT_GROUP)
      .bind(
        run,
        g.envId,
        g.stats.numSeqs,
        g.stats.totalTokens,
        g.stats.completionTokens,
        g.stats.scoreMean,
        g.stats.scoreMin,
        g.stats.scoreMax,
        g.scoresJson,
        g.policyVersion,
        g.payloadKey,
        g.payloadBytes,
        g.now,
        g.dedupeCutoff,
        g.idempotencyKey,
        g.payloadOffset,
        g.dedupeKey,
        g.tokenId,
        g.encoding,
        g.raw?.length ?? null,
        g.raw?.crc32 ?? null,
        g.offline ? 1 : 0,
        g.submission.longestSeq,
        g.submission.envIdsJson,
      ),
  ];
  if (g.inline !== null) statements.push(d1.prepare(INSERT_INLINE_PAYLOAD).bind(run, g.inline));
  if (g.idempotencyKey !== null) {
    statements.push(d1.prepare(RECORD_ITEM_KEY).bind(run, g.idempotencyKey, g.dedupeKey, g.now));
  }
  return statements;
}

export function touchEnvStatement(
  d1: D1Database,
  run: string,
  envId: number,
  now: number,
): D1PreparedStatement {
  return d1.prepare(TOUCH_ENV).bind(run, envId, now);
}

/** The row a group's insert returns (none: a duplicate or an unknown env). */
const insertedGroupRow = z.object({
  id: z.number(),
  status: z.enum(["queued", "buffered", "delivered"]),
});
export type InsertedGroup = z.infer<typeof insertedGroupRow>;

/** The group an insert of groupInsertStatements stored, from its result in the batch. */
export function insertedGroupOf(result: D1Result | undefined): InsertedGroup | null {
  return result ? (rowsOf(result, insertedGroupRow)[0] ?? null) : null;
}

const answerRow = z.object({ response: z.string() });
const submissionRow = z.object({ id: z.number(), status: z.string() });
const ingestLimitsRow = z.object({ max_token_len: z.number().nullable(), env_ids: z.string() });

/** The answer recorded for a queue item's idempotency key, if it was used. */
export async function itemKeyAnswer(
  d1: D1Database,
  run: string,
  key: string,
): Promise<{ groupId: number | null } | null> {
  const used = await firstRow(
    d1.prepare("SELECT response FROM idempotency_keys WHERE run = ?1 AND key = ?2").bind(run, key),
    answerRow,
  );
  if (!used) return null;
  return { groupId: (JSON.parse(used.response) as { group_id: number | null }).group_id };
}

/** The group a submission with this dedupe key stored after `cutoff`, if any. */
export function recentSubmission(
  d1: D1Database,
  run: string,
  dedupeKey: string,
  cutoff: number,
): Promise<{ id: number; status: string } | null> {
  return firstRow(
    d1
      .prepare(`SELECT id, status FROM groups WHERE ${storedCopy(2, 3)} ORDER BY id LIMIT 1`)
      .bind(run, dedupeKey, cutoff),
    submissionRow,
  );
}

/**
 * What ingest checks against the run before writing: the trainer's registered max_token_len (-1
 * when none registered) and which of `envIds` are registered in the run. One read.
 */
export async function runIngestLimits(
  d1: D1Database,
  run: string,
  envIds: readonly number[],
): Promise<{ maxTokenLen: number; envIds: Set<number> }> {
  const row = await firstRow(
    d1
      .prepare(
        `SELECT (SELECT max_token_len FROM runs WHERE name = ?1) AS max_token_len,
  (SELECT json_group_array(env_id) FROM envs
    WHERE run = ?1 AND env_id IN (SELECT value FROM json_each(?2))) AS env_ids`,
      )
      .bind(run, JSON.stringify(envIds)),
    ingestLimitsRow,
  );
  return {
    maxTokenLen: row?.max_token_len ?? -1,
    envIds: new Set(JSON.parse(row?.env_ids ?? "[]") as number[]),
  };
}
