/**
 * Atropos' `/status-env` arithmetic. Python envs size their worker pools from these numbers, so
 * their meaning is kept; the crashes are fixed (unknown env → 4xx upstream, zero total weight →
 * weight 1.0 instead of a 500), nothing is mutated, and an allocated env's data is reserved for
 * every batch the queue holds, not only the next (see docs/COMPATIBILITY.md).
 */
import type { StatusEnv } from "./api-schemas";

export const MIN_ENV_WEIGHT = 0.01;

/**
 * A paused env's self_queue_size: far above any allocation it could owe, so both Atropos' and this
 * project's worker formulas start nothing, while queue_size (which ends an env at total_steps)
 * stays the real one.
 */
export const PAUSED_SELF_QUEUE_SIZE = 2 ** 31 - 1;

/**
 * A paused env's unallocated_fraction: with any min_batch_allocation (≤ 1) the env's derived batch
 * size, B × (unallocated_fraction + allocation), is zero or less, so the worker target is too.
 */
export const PAUSED_UNALLOCATED_FRACTION = -1;

export interface EnvRecordForStatus {
  envId: number;
  maxContextLen: number;
  weight: number;
  connected: boolean;
  minBatchAllocation: number | null;
  groupSize: number;
  /** Paused through the API: no quota of its own, and neither weight nor allocation counted. */
  paused?: boolean;
}

export interface QueueByEnv {
  /** null = groups submitted without an env_id. */
  envId: number | null;
  sequences: number;
  maxGroupSize: number;
}

/** The /status-env numbers computed here; the route adds the run's policy version. */
export type StatusEnvResult = Omit<StatusEnv, "policy_version">;

export function computeStatusEnv(input: {
  envId: number;
  envs: readonly EnvRecordForStatus[];
  queue: readonly QueueByEnv[];
  batchSize: number;
  step: number;
}): StatusEnvResult {
  const me = input.envs.find((e) => e.envId === input.envId);
  if (!me) throw new Error(`env ${input.envId} is not registered`);
  const connected = input.envs.filter((e) => e.connected && !e.paused);

  const totalWeight = connected.reduce((s, e) => s + e.maxContextLen * Math.max(0, e.weight), 0);
  const envWeight =
    totalWeight > 0 ? Math.max(MIN_ENV_WEIGHT, (me.maxContextLen * me.weight) / totalWeight) : 1.0;

  const totalMinAllocation = connected.reduce((s, e) => s + (e.minBatchAllocation ?? 0), 0);
  const unallocatedFraction = 1 - Math.min(totalMinAllocation, 1.0);

  let maxGroupSize = 1;
  for (const q of input.queue) maxGroupSize = Math.max(maxGroupSize, q.maxGroupSize);
  const mine = input.queue.find((q) => q.envId === input.envId);
  const selfSequences = mine?.sequences ?? 0;
  const envGroupSize = Math.max(me.groupSize, mine?.maxGroupSize ?? 0);

  const minSequencesByEnv = new Map<number, number>();
  for (const e of connected) {
    if (e.minBatchAllocation !== null) {
      minSequencesByEnv.set(e.envId, Math.trunc(input.batchSize * e.minBatchAllocation));
    }
  }

  // Each batch formed from the queue takes an allocated env's minimum first, so that much of its
  // data per queued batch never fills the unallocated part. Atropos reserved one batch's worth
  // only; with the queue at its usual bound of several batches, the allocated env's data for its
  // later minimums counted as competition and throttled the envs without an allocation to a
  // trickle (Atropos hid this by draining the queue into formed batches it no longer counted).
  const queuedSequences = input.queue.reduce((s, q) => s + Math.max(0, q.sequences), 0);
  const queuedBatches =
    input.batchSize > 0 ? Math.max(1, Math.ceil(queuedSequences / input.batchSize)) : 1;

  let available = 0;
  if (maxGroupSize > 1) {
    for (const q of input.queue) {
      if (q.envId === input.envId || q.sequences <= 0) continue;
      const packed = Math.ceil(q.sequences / maxGroupSize) * maxGroupSize;
      const reserved = q.envId === null ? 0 : (minSequencesByEnv.get(q.envId) ?? 0) * queuedBatches;
      available += Math.max(0, packed - reserved);
    }
  }

  const queueSize = Math.floor((selfSequences + available) / envGroupSize);
  if (me.paused) {
    // Zero quota: no share of the batch, no weight, and nothing owed to an allocation.
    return {
      current_step: input.step,
      queue_size: queueSize,
      unallocated_fraction: PAUSED_UNALLOCATED_FRACTION,
      self_queue_size: PAUSED_SELF_QUEUE_SIZE,
      max_group_size: maxGroupSize,
      env_weight: 0,
    };
  }
  return {
    current_step: input.step,
    queue_size: queueSize,
    unallocated_fraction: unallocatedFraction,
    self_queue_size: Math.floor(selfSequences / envGroupSize),
    max_group_size: maxGroupSize,
    env_weight: envWeight,
  };
}
