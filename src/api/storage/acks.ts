/**
 * The reads and writes of acknowledging a leased batch: the batch as the ack rule sees it
 * (src/core/batching/ack-rule.ts) and the write that completes it. Only the RunCoordinator calls these,
 * under its run's lock.
 */
import { and, eq, sql } from "drizzle-orm";
import type { AckedBatchView } from "../../core/batching/ack-rule";
import { compiled } from "./compiled";
import { batches } from "./schema";
import { guardedBatch } from "./transitions";

// Placeholders of the compiled ack queries (built once per isolate: an ack is on every step).
const p = {
  run: sql.placeholder("run"),
  batchId: sql.placeholder("batchId"),
  now: sql.placeholder("now"),
};

const ackQueries = {
  lease: compiled((d) =>
    d
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
      .where(and(eq(batches.id, p.batchId), eq(batches.run, p.run)))
      .limit(1),
  ),
  ackBatch: compiled((d) =>
    d
      .update(batches)
      .set({ status: "acked", ackedAt: sql`${p.now}` })
      .where(eq(batches.id, p.batchId)),
  ),
};

/** The batch as an ack decides from it (src/core/batching/ack-rule.ts), with its step. */
export async function getLease(
  d1: D1Database,
  run: string,
  batchId: string,
): Promise<(AckedBatchView & { step: number }) | undefined> {
  // Guarded: the ack that follows relies on the batch triggers (transitions.ts).
  const [result] = await guardedBatch(d1, [ackQueries.lease.bind(d1, { run, batchId })]);
  const row = ackQueries.lease.rows(result!)[0];
  return row && { ...row, priorLeaseIds: parseLeaseIds(row.priorLeaseIds) };
}

function parseLeaseIds(json: string | null): string[] {
  return json ? (JSON.parse(json) as string[]) : [];
}

/**
 * Acknowledges the batch: its trigger (drizzle/0019) delivers its groups and admits those the
 * replay buffer keeps, in the same statement.
 */
export async function ackLease(d1: D1Database, batchId: string, now: number): Promise<void> {
  await ackQueries.ackBatch.bind(d1, { batchId, now }).run();
}
