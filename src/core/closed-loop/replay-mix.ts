/**
 * Mixing replayed groups into a batch: a configured fraction of the batch's sequences comes from
 * the replay buffer (highest priority first), within one group of that target, and online groups
 * fill the rest exactly, so the batch is still exactly batch_size sequences.
 */
import {
  type EnvAllocation,
  type PackResult,
  packBatch,
  type QueuedGroupRef,
} from "../batching/packing";

export interface ReplayCandidate {
  id: number;
  size: number;
  /** Higher replays first (the group's mean score). */
  priority: number;
}

export type MixResult =
  | { ok: true; ids: number[]; replayIds: number[]; sequences: number }
  | { ok: false; reason: string };

/** Replay sequences a batch aims for: the fraction of batch_size, rounded. */
export function replayTarget(batchSize: number, fraction: number): number {
  return Math.max(0, Math.min(batchSize, Math.round(batchSize * fraction)));
}

/**
 * Replay selections to try, closest to `target` first: the highest-priority groups that fit under
 * the target, and that selection plus the next group (over the target by less than one group).
 * Each differs from the target by less than the largest group in it.
 */
export function replaySelections(
  candidates: readonly ReplayCandidate[],
  target: number,
  batchSize: number,
): ReplayCandidate[][] {
  if (target <= 0) return [];
  const ordered = [...candidates]
    .filter((c) => c.size >= 1 && c.size <= batchSize)
    .sort((a, b) => b.priority - a.priority || a.id - b.id);
  const under: ReplayCandidate[] = [];
  let sum = 0;
  let firstSkipped: ReplayCandidate | null = null;
  for (const c of ordered) {
    if (sum + c.size <= target) {
      under.push(c);
      sum += c.size;
    } else firstSkipped ??= c;
    if (sum === target) break;
  }
  const options: ReplayCandidate[][] = [];
  if (under.length > 0) options.push(under);
  if (sum < target && firstSkipped && sum + firstSkipped.size <= batchSize) {
    options.push([...under, firstSkipped]);
  }
  const total = (o: ReplayCandidate[]) => o.reduce((s, c) => s + c.size, 0);
  return options.sort((a, b) => Math.abs(total(a) - target) - Math.abs(total(b) - target));
}

/**
 * Packs one batch of online groups (FIFO, allocations honoured) plus replayed ones. Falls back to
 * an online-only batch when no replay selection leaves a remainder the online queue can fill
 * exactly; fails only when the online queue cannot form a batch at all.
 */
export function mixBatch(
  online: readonly QueuedGroupRef[],
  replay: readonly ReplayCandidate[],
  batchSize: number,
  fraction: number,
  allocations: readonly EnvAllocation[] = [],
): MixResult {
  const target = replayTarget(batchSize, fraction);
  for (const selection of replaySelections(replay, target, batchSize)) {
    const replayed = selection.reduce((s, c) => s + c.size, 0);
    // A batch of replays alone would deliver no new data: keep at least one online sequence.
    if (replayed >= batchSize) continue;
    const rest: PackResult = packBatch(online, batchSize - replayed, allocations);
    if (rest.ok) {
      return {
        ok: true,
        ids: rest.ids,
        replayIds: selection.map((c) => c.id),
        sequences: batchSize,
      };
    }
  }
  const plain = packBatch(online, batchSize, allocations);
  return plain.ok ? { ...plain, replayIds: [] } : plain;
}
