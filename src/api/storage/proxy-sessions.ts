/** Inference-proxy sessions in D1 (table proxy_sessions). */

import { z } from "zod";
import { type ProxyTracking, proxyTrackingSchema } from "../../core/wire/proxy-session";
import type { Trajectory } from "../../core/wire/trajectory";
import { firstRow, rowsOf } from "./rows";
import { taskGroupInsert } from "./task-registry";
import { trajectoryInserts } from "./trajectories";

export interface ProxySessionRow {
  run: string;
  id: string;
  status: "open" | "finished";
  tracking: ProxyTracking;
  version: number;
  createdAt: number;
  lastUsedAt: number;
  expiresAt: number;
  groupId: number | null;
  /** The token that created it (null: API_TOKEN, open local development, or before owners). */
  owner: string | null;
  /** The registered task the session was opened for (null: an ordinary session). */
  task: string | null;
}

const rawRow = z.object({
  run: z.string(),
  id: z.string(),
  status: z.string(),
  tracking: z.string(),
  version: z.number(),
  created_at: z.number(),
  last_used_at: z.number(),
  expires_at: z.number(),
  group_id: z.number().nullable(),
  owner: z.string().nullable(),
  task: z.string().nullable(),
});
type RawRow = z.infer<typeof rawRow>;

const COLUMNS =
  "run, id, status, tracking, version, created_at, last_used_at, expires_at, group_id, owner, task";

function fromRaw(row: RawRow): ProxySessionRow {
  return {
    run: row.run,
    id: row.id,
    status: row.status === "finished" ? "finished" : "open",
    tracking: proxyTrackingSchema.parse(JSON.parse(row.tracking)),
    version: row.version,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    expiresAt: row.expires_at,
    groupId: row.group_id,
    owner: row.owner,
    task: row.task,
  };
}

export async function loadSession(
  db: D1Database,
  run: string,
  id: string,
): Promise<ProxySessionRow | null> {
  const row = await firstRow(
    db.prepare(`SELECT ${COLUMNS} FROM proxy_sessions WHERE run = ?1 AND id = ?2`).bind(run, id),
    rawRow,
  );
  return row ? fromRaw(row) : null;
}

/** Expired sessions are kept this long (their routes answer 404 saying when they expired). */
export const EXPIRED_KEPT_MS = 24 * 3_600_000;

/**
 * Creates the session (owned by `owner`) unless it exists; returns the stored one either way, so
 * the caller checks whose it is. Sessions of the run expired for longer than EXPIRED_KEPT_MS are
 * dropped on the way.
 */
export async function createSession(
  db: D1Database,
  run: string,
  id: string,
  tracking: ProxyTracking,
  now: number,
  ttlMs: number,
  owner: string | null,
  task: string | null = null,
): Promise<ProxySessionRow> {
  const [, created] = await db.batch([
    db
      .prepare("DELETE FROM proxy_sessions WHERE run = ?1 AND expires_at < ?2")
      .bind(run, now - EXPIRED_KEPT_MS),
    db
      .prepare(
        `INSERT INTO proxy_sessions (${COLUMNS}) VALUES (?1, ?2, 'open', ?3, 0, ?4, ?4, ?5, NULL, ?6, ?7)
         ON CONFLICT (run, id) DO UPDATE SET run = run RETURNING ${COLUMNS}`,
      )
      .bind(run, id, JSON.stringify(tracking), now, now + ttlMs, owner, task),
  ]);
  return fromRaw(rowsOf(created!, rawRow)[0]!);
}

/** Writes the tracking if nobody wrote since `session` was read; false when someone did. */
export async function saveTracking(
  db: D1Database,
  session: ProxySessionRow,
  tracking: ProxyTracking,
  now: number,
  ttlMs: number,
): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE proxy_sessions SET tracking = ?1, version = version + 1, last_used_at = ?2, expires_at = ?3
       WHERE run = ?4 AND id = ?5 AND version = ?6 AND status = 'open'`,
    )
    .bind(JSON.stringify(tracking), now, now + ttlMs, session.run, session.id, session.version)
    .run();
  return result.meta.changes > 0;
}

/**
 * Marks the session finished with its group and stores its trajectories beside the group (and,
 * for a task session, the group's task, contributor and mean score: `taskGroup`).
 */
export async function finishSession(
  db: D1Database,
  session: ProxySessionRow,
  groupId: number,
  trajectories: readonly Trajectory[],
  now: number,
  taskGroup: { tokenId: string | null; scoreMean: number | null } | null = null,
): Promise<void> {
  await db.batch([
    db
      .prepare(
        "UPDATE proxy_sessions SET status = 'finished', group_id = ?1, version = version + 1, last_used_at = ?2 WHERE run = ?3 AND id = ?4",
      )
      .bind(groupId, now, session.run, session.id),
    ...trajectoryInserts(db, session.run, groupId, trajectories, now),
    ...(taskGroup && session.task !== null
      ? [
          taskGroupInsert(
            db,
            session.run,
            groupId,
            session.task,
            taskGroup.tokenId,
            taskGroup.scoreMean,
            now,
          ),
        ]
      : []),
  ]);
}

export async function deleteSession(db: D1Database, run: string, id: string): Promise<boolean> {
  const result = await db
    .prepare("DELETE FROM proxy_sessions WHERE run = ?1 AND id = ?2")
    .bind(run, id)
    .run();
  return result.meta.changes > 0;
}
