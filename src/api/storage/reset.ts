/**
 * Removing a run's rows: what must be cleared outside D1 first (env workers, env sessions), then
 * every table's rows of the run in one transaction.
 */
import { eq } from "drizzle-orm";
import { db } from "./runs";
import {
  batches,
  batchStatistics,
  deadLetters,
  envs,
  envWorkers,
  evalBaselines,
  groupPayloads,
  groups,
  groupTokenTexts,
  idempotencyKeys,
  metrics,
  proxySessions,
  queueCounts,
  regressionGuards,
  replayGroups,
  runEvents,
  runInference,
  runs,
  taskGroups,
  tasks,
  trajectories,
  workerStats,
} from "./schema";

/** The run's env worker (feeder) names and env ids, in one round trip. */
export async function runWorkersAndEnvs(
  d1: D1Database,
  run: string,
): Promise<{ feeders: string[]; envIds: number[] }> {
  const d = db(d1);
  const [feeders, envRows] = await d.batch([
    d.select({ name: envWorkers.name }).from(envWorkers).where(eq(envWorkers.run, run)),
    d.select({ envId: envs.envId }).from(envs).where(eq(envs.run, run)),
  ]);
  return { feeders: feeders.map((f) => f.name), envIds: envRows.map((e) => e.envId) };
}

/** Deletes every D1 row of the run (docs/API.md lists what a reset removes). */
export async function deleteRunRows(d1: D1Database, run: string): Promise<void> {
  const d = db(d1);
  await d.batch([
    d.delete(groups).where(eq(groups.run, run)),
    d.delete(batches).where(eq(batches.run, run)),
    d.delete(envs).where(eq(envs.run, run)),
    d.delete(idempotencyKeys).where(eq(idempotencyKeys.run, run)),
    d.delete(queueCounts).where(eq(queueCounts.run, run)),
    d.delete(metrics).where(eq(metrics.run, run)),
    d.delete(batchStatistics).where(eq(batchStatistics.run, run)),
    d.delete(deadLetters).where(eq(deadLetters.run, run)),
    d.delete(workerStats).where(eq(workerStats.run, run)),
    d.delete(envWorkers).where(eq(envWorkers.run, run)),
    d.delete(proxySessions).where(eq(proxySessions.run, run)),
    d.delete(trajectories).where(eq(trajectories.run, run)),
    d.delete(groupTokenTexts).where(eq(groupTokenTexts.run, run)),
    d.delete(groupPayloads).where(eq(groupPayloads.run, run)),
    d.delete(runInference).where(eq(runInference.run, run)),
    d.delete(replayGroups).where(eq(replayGroups.run, run)),
    d.delete(regressionGuards).where(eq(regressionGuards.run, run)),
    d.delete(evalBaselines).where(eq(evalBaselines.run, run)),
    d.delete(runEvents).where(eq(runEvents.run, run)),
    d.delete(tasks).where(eq(tasks.run, run)),
    d.delete(taskGroups).where(eq(taskGroups.run, run)),
    d.delete(runs).where(eq(runs.name, run)),
  ]);
}
