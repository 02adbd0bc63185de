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
} from "../core/packing";
import { type EnvRow, isEnvActive } from "./storage/runs";

/** Envs with a min_batch_allocation that are connected and recently seen. */
export function activeAllocations(
  envs: readonly EnvRow[],
  now: number,
  staleSeconds: number,
): EnvAllocation[] {
  const allocations: EnvAllocation[] = [];
  for (const e of envs) {
    if (
      e.minBatchAllocation !== null &&
      e.minBatchAllocation > 0 &&
      isEnvActive(e, now, staleSeconds)
    ) {
      allocations.push({ envId: e.envId, name: e.realName, fraction: e.minBatchAllocation });
    }
  }
  return allocations;
}

/**
 * Plans the next batch from the queue's oldest groups (`window`) plus groups read for allocated
 * envs (`extra`, which may sit behind the window): candidates in FIFO order, then `packBatch`.
 */
export function planBatch(
  window: readonly QueuedGroupRef[],
  extra: readonly QueuedGroupRef[],
  batchSize: number,
  allocations: readonly EnvAllocation[],
): PackResult {
  let queue: readonly QueuedGroupRef[] = window;
  if (extra.length > 0) {
    const byId = new Map<number, QueuedGroupRef>();
    for (const g of window) byId.set(g.id, g);
    for (const g of extra) byId.set(g.id, g);
    queue = [...byId.values()].sort((x, y) => x.id - y.id);
  }
  return packBatch(queue, batchSize, allocations);
}
