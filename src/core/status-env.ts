/**
 * Atropos' `/status-env` arithmetic. Python envs size their worker pools from these numbers, so
 * their meaning is kept; the crashes are fixed (unknown env → 4xx upstream, zero total weight →
 * weight 1.0 instead of a 500), nothing is mutated, and an allocated env's data is reserved for
 * every batch the queue holds, not only the next (see docs/COMPATIBILITY.md).
 */

export const MIN_ENV_WEIGHT = 0.01;

export interface EnvRecordForStatus {
  envId: number;
  maxContextLen: number;
  weight: number;
  connected: boolean;
  minBatchAllocation: number | null;
  groupSize: number;
}

export interface QueueByEnv {
  /** null = groups submitted without an env_id. */
  envId: number | null;
  sequences: number;
  maxGroupSize: number;
}

export interface StatusEnvResult {
  current_step: number;
  queue_size: number;
  unallocated_fraction: number;
  self_queue_size: number;
  max_group_size: number;
  env_weight: number;
}

export function computeStatusEnv(input: {
  envId: number;
  envs: readonly EnvRecordForStatus[];
  queue: readonly QueueByEnv[];
  batchSize: number;
  step: number;
}): StatusEnvResult {
  const me = input.envs.find((e) => e.envId === input.envId);
  if (!me) throw new Error(`env ${input.envId} is not registered`);
  const connected = input.envs.filter((e) => e.connected);

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

  return {
    current_step: input.step,
    queue_size: Math.floor((selfSequences + available) / envGroupSize),
    unallocated_fraction: unallocatedFraction,
    self_queue_size: Math.floor(selfSequences / envGroupSize),
    max_group_size: maxGroupSize,
    env_weight: envWeight,
  };
}
