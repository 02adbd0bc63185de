/**
 * Batch planning without I/O: which envs reserve part of a batch, and which candidate groups
 * form the next batch. The RunCoordinator reads the candidates (storage/leases.ts) and writes
 * the outcome; everything in between is here, so it can be tested and changed on its own.
 */
import {
  type EnvAllocation,
  type PackResult,
  packBatch,
  type QueuedGroupRef,
} from "../core/batching/packing";
import { type MixResult, mixBatch, type ReplayCandidate } from "../core/closed-loop/replay-mix";
import type { AllocatingEnv } from "./storage/leases";
import { isEnvActive } from "./storage/runs";

/** Replay mixing for one batch formation: the buffer's candidates and the fraction to aim for. */
export interface ReplayPlan {
  candidates: ReplayCandidate[];
  fraction: number;
}

/** Envs with a min_batch_allocation that are connected, recently seen and not paused. */
export function activeAllocations(
  envs: readonly AllocatingEnv[],
  now: number,
  staleSeconds: number,
): EnvAllocation[] {
  const allocations: EnvAllocation[] = [];
  for (const e of envs) {
    if (
      e.minBatchAllocation !== null &&
      e.minBatchAllocation > 0 &&
      !e.paused &&
      isEnvActive(e, now, staleSeconds)
    ) {
      allocations.push({ envId: e.envId, name: e.realName, fraction: e.minBatchAllocation });
    }
  }
  return allocations;
}

/**
 * Plans the next batch from the queue's oldest groups (`window`) plus groups read for allocated
 * envs (`extra`, which may sit behind the window): candidates in FIFO order, then `packBatch`,
 * or `mixBatch` when replayed groups are mixed in (their ids come back in `replayIds`).
 */
export function planBatch(
  window: readonly QueuedGroupRef[],
  extra: readonly QueuedGroupRef[],
  batchSize: number,
  allocations: readonly EnvAllocation[],
  replay: ReplayPlan | null = null,
): PackResult | MixResult {
  let queue: readonly QueuedGroupRef[] = window;
  if (extra.length > 0) {
    const byId = new Map<number, QueuedGroupRef>();
    for (const g of window) byId.set(g.id, g);
    for (const g of extra) byId.set(g.id, g);
    queue = [...byId.values()].sort((x, y) => x.id - y.id);
  }
  return replay
    ? mixBatch(queue, replay.candidates, batchSize, replay.fraction, allocations)
    : packBatch(queue, batchSize, allocations);
}
