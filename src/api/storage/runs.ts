/**
 * Reads of run and env metadata shared by the Worker routes and the Durable Objects.
 */
import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import type { EnvRecordForStatus, QueueByEnv } from "../../core/status-env";
import { envs, runs } from "./schema";

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

export function isEnvActive(env: EnvRow, now: number, staleSeconds: number): boolean {
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

export interface QueueCountRow {
  env_id: number;
  size: number;
  status: "queued" | "buffered";
  n: number;
}

export async function queueCounts(d1: D1Database, run: string): Promise<QueueCountRow[]> {
  const { results } = await d1
    .prepare("SELECT env_id, size, status, n FROM queue_counts WHERE run = ?1 AND n > 0")
    .bind(run)
    .all<QueueCountRow>();
  return results;
}

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
