/**
 * Where the regression guard reads evaluation results: one small function, so the guard can
 * move to another metrics store without changing.
 */

/** The metrics an env reported for one step, or null. */
export async function readEvaluation(
  d1: D1Database,
  run: string,
  envId: number,
  step: number,
): Promise<Record<string, number> | null> {
  const row = await d1
    .prepare("SELECT metrics FROM evals WHERE run = ?1 AND env_id = ?2 AND step = ?3")
    .bind(run, envId, step)
    .first<{ metrics: string }>();
  return row ? (JSON.parse(row.metrics) as Record<string, number>) : null;
}
