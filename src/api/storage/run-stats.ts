/**
 * The aggregates of GET /v1/runs/{run}/stats, read in one D1 batch: rates over a window, the
 * oldest queued group, leases, batch formation times, per-(env, token) group totals, queued
 * policy versions, dead letters and the EnvFeeders' counters.
 */
import { and, count, desc, eq, gt, isNotNull, max, min, sql } from "drizzle-orm";
import { db } from "./runs";
import { batches, deadLetters, groups, workerStats } from "./schema";

/** One (env, token) pair's groups. */
export interface GroupTotalsRow {
  envId: number | null;
  tokenId: string | null;
  groups: number;
  seqs: number;
  scoreSum: number | null;
  scored: number;
  completion: number | null;
  bytes: number;
  delivered: number;
}

export async function runActivity(d1: D1Database, run: string, now: number, since: number) {
  const orm = db(d1);
  const [ingested, delivered, oldest, leases, formation, totals, queued, dead, recent, workers] =
    await orm.batch([
      orm
        .select({ groups: count(), seqs: sql<number>`COALESCE(SUM(${groups.numSeqs}), 0)` })
        .from(groups)
        .where(and(eq(groups.run, run), gt(groups.createdAt, since))),
      orm
        .select({ batches: count(), seqs: sql<number>`COALESCE(SUM(${batches.numSeqs}), 0)` })
        .from(batches)
        .where(and(eq(batches.run, run), gt(batches.createdAt, since))),
      orm
        .select({ createdAt: groups.createdAt })
        .from(groups)
        .where(and(eq(groups.run, run), eq(groups.status, "queued")))
        .orderBy(groups.id)
        .limit(1),
      orm
        .select({
          outstanding: sql<number>`COALESCE(SUM(${batches.leaseExpiresAt} > ${now}), 0)`,
          expired: sql<number>`COALESCE(SUM(${batches.leaseExpiresAt} <= ${now}), 0)`,
        })
        .from(batches)
        .where(and(eq(batches.run, run), eq(batches.status, "leased"))),
      orm
        .select({ ms: batches.formationMs })
        .from(batches)
        .where(and(eq(batches.run, run), isNotNull(batches.formationMs)))
        .orderBy(desc(batches.createdAt))
        .limit(200),
      // One pass over the run's groups serves the per-env and the per-token totals.
      orm
        .select({
          envId: groups.envId,
          tokenId: groups.tokenId,
          groups: count(),
          seqs: sql<number>`SUM(${groups.numSeqs})`,
          scoreSum: sql<number | null>`SUM(${groups.scoreMean})`,
          scored: count(groups.scoreMean),
          completion: sql<number | null>`SUM(${groups.completionTokens})`,
          bytes: sql<number>`COALESCE(SUM(${groups.payloadBytes}), 0)`,
          delivered: sql<number>`COALESCE(SUM(${groups.status} = 'delivered'), 0)`,
        })
        .from(groups)
        .where(eq(groups.run, run))
        .groupBy(groups.envId, groups.tokenId),
      orm
        .select({ lo: min(groups.policyVersion), hi: max(groups.policyVersion) })
        .from(groups)
        .where(and(eq(groups.run, run), eq(groups.status, "queued"))),
      orm.select({ n: count() }).from(deadLetters).where(eq(deadLetters.run, run)),
      orm
        .select({
          id: deadLetters.id,
          env_id: deadLetters.envId,
          error: deadLetters.error,
          created_at: deadLetters.createdAt,
        })
        .from(deadLetters)
        .where(eq(deadLetters.run, run))
        .orderBy(desc(deadLetters.id))
        .limit(10),
      orm
        .select({
          envId: workerStats.envId,
          itemsInFlight: workerStats.itemsInFlight,
          itemsSucceeded: workerStats.itemsSucceeded,
          itemsFailed: workerStats.itemsFailed,
          workerStatus: workerStats.workerStatus,
        })
        .from(workerStats)
        .where(eq(workerStats.run, run)),
    ]);
  return {
    ingested: ingested[0] ?? { groups: 0, seqs: 0 },
    delivered: delivered[0] ?? { batches: 0, seqs: 0 },
    oldestQueuedAt: oldest[0]?.createdAt ?? null,
    leases: leases[0] ?? { outstanding: 0, expired: 0 },
    /** Newest first. */
    formationMs: formation.map((r) => Number(r.ms)),
    groupTotals: totals satisfies GroupTotalsRow[],
    queuedPolicyVersions: queued[0] ?? { lo: null, hi: null },
    deadLetters: dead[0]?.n ?? 0,
    recentDeadLetters: recent,
    workers,
  };
}
