/**
 * The run's mix as set while it goes (PATCH /v1/runs/{run}/envs/{id}): an env's weight, minimum
 * batch allocation and paused flag. /status-env, the env feeders and batch formation read them
 * from the envs row on their next tick, so nothing else has to be told. A weight or allocation
 * set here is pinned: the env registering again after a restart does not overwrite it.
 */
import { and, eq } from "drizzle-orm";
import type { EnvControl, EnvControlRequest } from "../../core/wire/api-schemas";
import { db } from "./runs";
import { envs } from "./schema";

/** Applies the changes; returns the env's control state after them, or null if it is unknown. */
export async function updateEnvControl(
  d1: D1Database,
  run: string,
  envId: number,
  change: EnvControlRequest,
): Promise<EnvControl | null> {
  const rows = await db(d1)
    .update(envs)
    .set({
      ...(change.weight !== undefined ? { weight: change.weight, weightPinned: true } : {}),
      ...(change.min_batch_allocation !== undefined
        ? { minBatchAllocation: change.min_batch_allocation, minBatchAllocationPinned: true }
        : {}),
      ...(change.paused !== undefined ? { paused: change.paused } : {}),
    })
    .where(and(eq(envs.run, run), eq(envs.envId, envId)))
    .returning();
  const row = rows[0];
  if (!row) return null;
  return {
    env_id: row.envId,
    name: row.realName,
    weight: row.weight,
    min_batch_allocation: row.minBatchAllocation,
    paused: row.paused,
  };
}
