/**
 * Reads of run and env metadata shared by the Worker routes and the Durable Objects.
 */
import { and, eq, gt, lt, sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import type { EnvRecordForStatus, QueueByEnv } from "../../core/wire/status-env";
import { batches, envs, queueCounts as queueCountTable, runs } from "./schema";

export type RunRow = typeof runs.$inferSelect;
export type EnvRow = typeof envs.$inferSelect;

export function db(d1: D1Database) {
  return drizzle(d1);
}

export async function getRun(d1: D1Database, run: string): Promise<RunRow | undefined> {
  const rows = await db(d1).select().from(runs).where(eq(runs.name, run)).limit(1);
  return rows[0];
}

export async function listEnvs(d1: D1Database, run: string): Promise<EnvRow[]> {
  return db(d1).select().from(envs).where(eq(envs.run, run)).orderBy(envs.envId);
}

export async function getEnv(
  d1: D1Database,
  run: string,
  envId: number,
): Promise<EnvRow | undefined> {
  const rows = await db(d1)
    .select()
    .from(envs)
    .where(and(eq(envs.run, run), eq(envs.envId, envId)))
    .limit(1);
  return rows[0];
}

/** Every run, oldest first, as GET /v1/runs lists them. */
export async function listRunSummaries(d1: D1Database) {
  return db(d1)
    .select({
      name: runs.name,
      step: runs.step,
      policyVersion: runs.policyVersion,
      batchSize: runs.batchSize,
      registered: runs.registered,
      createdAt: runs.createdAt,
    })
    .from(runs)
    .orderBy(runs.createdAt);
}

/** An env's heartbeat: its last-seen time, written at most every 5 s. */
export async function touchEnv(
  d1: D1Database,
  run: string,
  envId: number,
  now: number,
): Promise<void> {
  await db(d1)
    .update(envs)
    .set({ lastSeenAt: now })
    .where(and(eq(envs.run, run), eq(envs.envId, envId), lt(envs.lastSeenAt, now - 5000)));
}

export function isEnvActive(
  env: Pick<EnvRow, "connected" | "lastSeenAt">,
  now: number,
  staleSeconds: number,
): boolean {
  return env.connected && now - env.lastSeenAt <= staleSeconds * 1000;
}

export function envStatus(env: EnvRow, now: number, staleSeconds: number) {
  if (!env.connected) return "disconnected" as const;
  return now - env.lastSeenAt <= staleSeconds * 1000 ? ("active" as const) : ("stale" as const);
}

export function toStatusEnvRecord(env: EnvRow): EnvRecordForStatus {
  return {
    envId: env.envId,
    maxContextLen: env.maxTokenLength,
    weight: env.weight,
    connected: env.connected,
    minBatchAllocation: env.minBatchAllocation,
    groupSize: env.groupSize,
    paused: env.paused,
  };
}

/** The run's waiting groups per (env, group size, status), as the triggers count them. */
export async function queueCounts(d1: D1Database, run: string) {
  return db(d1)
    .select({
      env_id: queueCountTable.envId,
      size: queueCountTable.size,
      status: queueCountTable.status,
      n: queueCountTable.n,
    })
    .from(queueCountTable)
    .where(and(eq(queueCountTable.run, run), gt(queueCountTable.n, 0)));
}
export type QueueCountRow = Awaited<ReturnType<typeof queueCounts>>[number];

/** Queued (not buffered) sequences and largest group size per env, as /status-env needs. */
export function queueByEnv(rows: readonly QueueCountRow[]): QueueByEnv[] {
  const byEnv = new Map<number, QueueByEnv>();
  for (const r of rows) {
    if (r.status !== "queued") continue;
    const key = r.env_id;
    const entry = byEnv.get(key) ?? { envId: key < 0 ? null : key, sequences: 0, maxGroupSize: 0 };
    entry.sequences += r.size * r.n;
    entry.maxGroupSize = Math.max(entry.maxGroupSize, r.size);
    byEnv.set(key, entry);
  }
  return [...byEnv.values()];
}

/** Creates the run's row if it has none yet. */
export function ensureRunStatement(d1: D1Database, run: string, now: number) {
  return db(d1)
    .insert(runs)
    .values({ name: run, createdAt: now, updatedAt: now })
    .onConflictDoNothing({ target: runs.name });
}

export async function ensureRun(d1: D1Database, run: string, now: number): Promise<void> {
  await ensureRunStatement(d1, run, now);
}

/** What a registration writes into its run's row (the step starts at `startingStep`). */
export type TrainerRegistration = Required<
  Pick<
    typeof runs.$inferInsert,
    | "batchSize"
    | "maxTokenLen"
    | "wandbGroup"
    | "wandbProject"
    | "checkpointDir"
    | "saveCheckpointInterval"
    | "numSteps"
  >
> & { startingStep: number };

/**
 * Records a trainer's registration, creating the run if needed. A (re)registering Atropos
 * trainer lost whatever it had pulled but not trained on: its GET /batch leases expire now, so
 * those batches are handed out again, first in line.
 */
export async function registerTrainer(
  d1: D1Database,
  run: string,
  reg: TrainerRegistration,
  now: number,
): Promise<void> {
  const d = db(d1);
  await d.batch([
    ensureRunStatement(d1, run, now),
    registerRunStatement(d, run, reg, now),
    d
      .update(batches)
      .set({ leaseExpiresAt: 0 })
      .where(
        and(eq(batches.run, run), eq(batches.consumer, "compat"), eq(batches.status, "leased")),
      ),
  ]);
}

function registerRunStatement(
  d: ReturnType<typeof db>,
  run: string,
  reg: TrainerRegistration,
  now: number,
) {
  return d
    .update(runs)
    .set({
      batchSize: reg.batchSize,
      maxTokenLen: reg.maxTokenLen,
      wandbGroup: reg.wandbGroup,
      wandbProject: reg.wandbProject,
      checkpointDir: reg.checkpointDir,
      saveCheckpointInterval: reg.saveCheckpointInterval,
      numSteps: reg.numSteps,
      step: reg.startingStep,
      registered: true,
      updatedAt: now,
    })
    .where(eq(runs.name, run));
}

/** The run's row (created if missing) in one round trip. */
export async function ensureAndGetRun(
  d1: D1Database,
  run: string,
  now: number,
): Promise<RunRow | undefined> {
  const d = db(d1);
  const [, rows] = await d.batch([
    ensureRunStatement(d1, run, now),
    d.select().from(runs).where(eq(runs.name, run)).limit(1),
  ]);
  return rows[0];
}

export async function setRunPolicyVersion(
  d1: D1Database,
  run: string,
  version: number,
  now: number,
): Promise<void> {
  await db(d1)
    .update(runs)
    .set({ policyVersion: version, updatedAt: now })
    .where(eq(runs.name, run));
}

/** The run and its envs in one round trip. */
export async function getRunAndEnvs(
  d1: D1Database,
  run: string,
): Promise<{ run: RunRow | undefined; envs: EnvRow[] }> {
  const d = db(d1);
  const [runRows, envRows] = await d.batch([
    d.select().from(runs).where(eq(runs.name, run)).limit(1),
    d.select().from(envs).where(eq(envs.run, run)).orderBy(envs.envId),
  ]);
  return { run: runRows[0], envs: envRows };
}

export type NewEnv = typeof envs.$inferInsert;

export async function insertEnv(d1: D1Database, env: NewEnv): Promise<void> {
  await db(d1).insert(envs).values(env);
}

/** A returning env's new settings; it is connected and seen now. */
export async function resumeEnv(
  d1: D1Database,
  run: string,
  envId: number,
  settings: Pick<NewEnv, "maxTokenLength" | "weight" | "groupSize" | "minBatchAllocation">,
  now: number,
): Promise<void> {
  await db(d1)
    .update(envs)
    .set({
      maxTokenLength: settings.maxTokenLength,
      groupSize: settings.groupSize,
      // What an operator set (PATCH) outlives the env's restart.
      weight: sql`CASE WHEN ${envs.weightPinned} THEN ${envs.weight} ELSE ${settings.weight} END`,
      minBatchAllocation: sql`CASE WHEN ${envs.minBatchAllocationPinned} THEN ${envs.minBatchAllocation} ELSE ${settings.minBatchAllocation ?? null} END`,
      connected: true,
      lastSeenAt: now,
    })
    .where(and(eq(envs.run, run), eq(envs.envId, envId)));
}

/** Returns whether the env existed. */
export async function disconnectEnv(d1: D1Database, run: string, envId: number): Promise<boolean> {
  const res = await db(d1)
    .update(envs)
    .set({ connected: false })
    .where(and(eq(envs.run, run), eq(envs.envId, envId)));
  return res.meta.changes > 0;
}
