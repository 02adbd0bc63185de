/** Trajectories stored beside their groups in D1 (table trajectories). */
import { type Trajectory, trajectorySchema } from "../../core/trajectory";

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

export async function groupTrajectories(
  db: D1Database,
  run: string,
  groupId: number,
): Promise<Trajectory[]> {
  const { results } = await db
    .prepare("SELECT body FROM trajectories WHERE run = ?1 AND group_id = ?2 ORDER BY sequence")
    .bind(run, groupId)
    .all<{ body: string }>();
  return results.map((row) => trajectorySchema.parse(JSON.parse(row.body)));
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
