/** Trajectories stored beside their groups in D1 (table trajectories). */

import { and, eq } from "drizzle-orm";
import { type Trajectory, trajectorySchema } from "../../core/wire/trajectory";
import { storedCopy } from "./groups";
import { db as orm } from "./runs";
import { trajectories as trajectoryTable } from "./schema";

export function trajectoryInserts(
  db: D1Database,
  run: string,
  groupId: number,
  trajectories: readonly Trajectory[],
  now: number,
): D1PreparedStatement[] {
  return trajectories.map((trajectory) =>
    db
      .prepare(
        "INSERT OR REPLACE INTO trajectories (run, group_id, sequence, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
      )
      .bind(run, groupId, trajectory.sequence, JSON.stringify(trajectory), now),
  );
}

/**
 * The same inserts for the group a submission stored (found by its dedupe key, as a retry finds
 * it), so they go into the group's own commit and a retry writes them again, idempotently: side
 * data is never lost between two transactions. Nothing is written when no such group exists.
 */
export function submissionTrajectoryInserts(
  db: D1Database,
  run: string,
  submission: { dedupeKey: string; dedupeCutoff: number },
  trajectories: readonly Trajectory[],
  now: number,
): D1PreparedStatement[] {
  return trajectories.map((trajectory) =>
    db
      .prepare(
        `INSERT OR REPLACE INTO trajectories (run, group_id, sequence, body, created_at)
SELECT ?1, id, ?3, ?4, ?5 FROM groups WHERE ${storedCopy(2, 6)}
ORDER BY id LIMIT 1`,
      )
      .bind(
        run,
        submission.dedupeKey,
        trajectory.sequence,
        JSON.stringify(trajectory),
        now,
        submission.dedupeCutoff,
      ),
  );
}

export async function groupTrajectories(
  d1: D1Database,
  run: string,
  groupId: number,
): Promise<Trajectory[]> {
  const rows = await orm(d1)
    .select({ body: trajectoryTable.body })
    .from(trajectoryTable)
    .where(and(eq(trajectoryTable.run, run), eq(trajectoryTable.groupId, groupId)))
    .orderBy(trajectoryTable.sequence);
  return rows.map((row) => trajectorySchema.parse(JSON.parse(row.body)));
}

/** Drops the trajectories of groups that are gone (retention). */
export function deleteGroupTrajectories(
  db: D1Database,
  run: string,
  groupIds: readonly number[],
): D1PreparedStatement {
  return db
    .prepare(
      "DELETE FROM trajectories WHERE run = ?1 AND group_id IN (SELECT value FROM json_each(?2))",
    )
    .bind(run, JSON.stringify(groupIds));
}
