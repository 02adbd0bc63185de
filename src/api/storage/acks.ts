/**
 * The reads and writes of acknowledging a leased batch: the batch as the ack rule sees it
 * (src/core/batching/ack-rule.ts) and the write that completes it. Only the RunCoordinator calls these,
 * under its run's lock.
 */
import { and, eq } from "drizzle-orm";
import type { AckedBatchView } from "../../core/batching/ack-rule";
import { db } from "./runs";
import { batches, groups } from "./schema";

function statementOf(
  d1: D1Database,
  query: { sql: string; params: unknown[] },
): D1PreparedStatement {
  return d1.prepare(query.sql).bind(...query.params);
}

/** The batch as an ack decides from it (src/core/batching/ack-rule.ts), with its step. */
export async function getLease(
  d1: D1Database,
  run: string,
  batchId: string,
): Promise<(AckedBatchView & { step: number }) | undefined> {
  const rows = await db(d1)
    .select({
      id: batches.id,
      status: batches.status,
      leaseId: batches.leaseId,
      leaseExpiresAt: batches.leaseExpiresAt,
      leaseCount: batches.leaseCount,
      priorLeaseIds: batches.priorLeaseIds,
      holder: batches.holder,
      ackedAt: batches.ackedAt,
      step: batches.step,
    })
    .from(batches)
    .where(and(eq(batches.id, batchId), eq(batches.run, run)))
    .limit(1);
  const row = rows[0];
  return row && { ...row, priorLeaseIds: parseLeaseIds(row.priorLeaseIds) };
}

function parseLeaseIds(json: string | null): string[] {
  return json ? (JSON.parse(json) as string[]) : [];
}

/** Marks the batch and its groups delivered; `extra` runs between the two (replay admission). */
export async function ackLease(
  d1: D1Database,
  batchId: string,
  now: number,
  extra: readonly D1PreparedStatement[] = [],
): Promise<void> {
  const d = db(d1);
  await d1.batch([
    statementOf(
      d1,
      d.update(groups).set({ status: "delivered" }).where(eq(groups.batchId, batchId)).toSQL(),
    ),
    ...extra,
    statementOf(
      d1,
      d
        .update(batches)
        .set({ status: "acked", ackedAt: now })
        .where(eq(batches.id, batchId))
        .toSQL(),
    ),
  ]);
}
