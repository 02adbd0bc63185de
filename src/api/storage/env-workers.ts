/**
 * What the queue path records in D1: the EnvFeeders a run has (so a reset finds them), each
 * feeder's item counters, and items that failed for good (dead letters).
 */
import { sql } from "drizzle-orm";
import { db } from "./runs";
import { envWorkers, workerStats } from "./schema";

/** Lists (or re-lists) the feeder `name` of `run`, running `envName` since `startedAt`. */
export async function listEnvWorker(
  d1: D1Database,
  worker: { run: string; name: string; envName: string; startedAt: number },
): Promise<void> {
  await db(d1)
    .insert(envWorkers)
    .values(worker)
    .onConflictDoUpdate({
      target: [envWorkers.run, envWorkers.name],
      set: { envName: sql`excluded.env_name`, startedAt: sql`excluded.started_at` },
    });
}

export type WorkerStatsRow = typeof workerStats.$inferInsert;

/** Replaces one env's feeder counters. */
export async function reportWorkerStats(d1: D1Database, stats: WorkerStatsRow): Promise<void> {
  await db(d1)
    .insert(workerStats)
    .values(stats)
    .onConflictDoUpdate({
      target: [workerStats.run, workerStats.envId],
      set: {
        itemsInFlight: sql`excluded.items_in_flight`,
        itemsSucceeded: sql`excluded.items_succeeded`,
        itemsFailed: sql`excluded.items_failed`,
        workerStatus: sql`excluded.worker_status`,
        updatedAt: sql`excluded.updated_at`,
      },
    });
}

// Raw SQL: a conditional insert (`INSERT … SELECT … WHERE NOT EXISTS`), which drizzle's builder
// cannot say.
const DEAD_LETTER_ONCE = `
INSERT INTO dead_letters (run, env_name, env_id, item, error, attempts, created_at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
WHERE NOT EXISTS (SELECT 1 FROM dead_letters WHERE run = ?1 AND substr(error, 1, ?8) = ?9)`;

/**
 * Records a dead letter unless the run already has one whose error starts with `prefix` (the
 * same item), so a redelivered failure is listed once.
 */
export async function recordDeadLetterOnce(
  d1: D1Database,
  letter: {
    run: string;
    envName: string;
    envId: number | null;
    item: string;
    error: string;
    attempts: number;
    createdAt: number;
  },
  prefix: string,
): Promise<void> {
  await d1
    .prepare(DEAD_LETTER_ONCE)
    .bind(
      letter.run,
      letter.envName,
      letter.envId,
      letter.item,
      letter.error,
      letter.attempts,
      letter.createdAt,
      prefix.length,
      prefix,
    )
    .run();
}
