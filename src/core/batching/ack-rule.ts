/**
 * What an ack of a leased batch means (docs/API.md, "Lease and ack"). Exactly-once needs an ack to
 * complete a batch only for the trainer that holds it: a lapsed lease, an id that never was a lease
 * of the batch, or an ack without an id while another trainer's lease is live is refused, saying
 * which of these happened. A repeated ack by the lease that completed the batch stays a success.
 */

/** The batch as the ack sees it. */
export interface AckedBatchView {
  id: string;
  status: "leased" | "acked";
  /** The current lease; once acked, the lease that completed the batch. */
  leaseId: string;
  leaseExpiresAt: number;
  /** How many times the batch was leased (1 + redeliveries). */
  leaseCount: number;
  /** Lease ids the batch had before the current one. */
  priorLeaseIds: readonly string[];
  /** Who took the current lease (a token id; null for API_TOKEN / open local development). */
  holder: string | null;
  ackedAt: number | null;
}

export type AckDecision =
  | { kind: "complete" }
  | { kind: "already_acked" }
  | { kind: "conflict"; message: string };

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * `leaseId`: the one the ack names (undefined: none). `caller`: the acking token's id (null for
 * API_TOKEN / open local development).
 */
export function decideAck(
  batch: AckedBatchView,
  leaseId: string | undefined,
  caller: string | null,
  now: number,
): AckDecision {
  const lapsed = leaseId !== undefined && batch.priorLeaseIds.includes(leaseId);
  const never = `'${leaseId}' is not a lease id of batch '${batch.id}' (it was never handed out for this batch); send the lease_id its lease answered`;
  if (batch.status === "acked") {
    if (leaseId === undefined || leaseId === batch.leaseId) return { kind: "already_acked" };
    const when = batch.ackedAt === null ? "" : ` at ${iso(batch.ackedAt)}`;
    return {
      kind: "conflict",
      message: lapsed
        ? `lease '${leaseId}' of batch '${batch.id}' lapsed; the batch was leased again and that lease acked it${when}: it has been trained on, so drop your copy and lease a new batch`
        : `${never}; the batch was acked${when} by another lease`,
    };
  }
  if (leaseId === batch.leaseId) return { kind: "complete" };
  const live = batch.leaseExpiresAt > now;
  const current = `lease ${batch.leaseCount} of it, ${live ? "live until" : "itself expired at"} ${iso(batch.leaseExpiresAt)}`;
  if (leaseId !== undefined) {
    return {
      kind: "conflict",
      message: lapsed
        ? `lease '${leaseId}' of batch '${batch.id}' lapsed and the batch was leased again (${current}); do not train on it twice: drop it and lease a new batch`
        : `${never}; its current lease is another one (${current})`,
    };
  }
  if (!live) return { kind: "complete" };
  if (batch.holder !== caller) {
    return {
      kind: "conflict",
      message: `batch '${batch.id}' is leased to another trainer (${current}); only its holder can ack it: send the lease_id your lease answered`,
    };
  }
  if (batch.leaseCount > 1) {
    return {
      kind: "conflict",
      message: `batch '${batch.id}' was leased again after a lease lapsed (${current}); an ack without lease_id cannot tell whether it comes from that lease: send the lease_id your lease answered`,
    };
  }
  return { kind: "complete" };
}
