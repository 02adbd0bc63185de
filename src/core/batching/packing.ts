/**
 * Batch formation: choose queued groups whose sequence counts sum exactly to the batch size,
 * oldest first, honouring per-env minimum allocations. Any combination of group sizes works
 * (Atropos only packed identical sizes up to the largest group and could deadlock silently);
 * when nothing can be formed the result says why.
 */
import { earliestExactSubset } from "./subset-sum";

export interface QueuedGroupRef {
  id: number;
  envId: number | null;
  size: number;
}

export interface EnvAllocation {
  envId: number;
  name: string;
  /** Fraction of the batch reserved for this env (Atropos `min_batch_allocation`). */
  fraction: number;
}

export type PackResult =
  | { ok: true; ids: number[]; sequences: number }
  | { ok: false; reason: string };

/** Atropos' per-env minimum sequence counts, scaled down when they over-subscribe the batch. */
export function minimumSequences(
  batchSize: number,
  allocations: readonly EnvAllocation[],
  smallestSizeByEnv: ReadonlyMap<number, number>,
): Map<number, number> {
  const mins = new Map<number, number>();
  let total = 0;
  for (const a of allocations) {
    const m = Math.floor(batchSize * a.fraction);
    if (m > 0) {
      mins.set(a.envId, m);
      total += m;
    }
  }
  if (total > batchSize) {
    for (const [envId, m] of mins) {
      const smallest = smallestSizeByEnv.get(envId) ?? 1;
      mins.set(envId, Math.max(smallest, Math.floor((m * batchSize) / total)));
    }
  }
  return mins;
}

function describeSizes(groups: readonly QueuedGroupRef[]): string {
  const counts = new Map<number, number>();
  for (const g of groups) counts.set(g.size, (counts.get(g.size) ?? 0) + 1);
  return [...counts.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([size, count]) => `${count}×${size}`)
    .join(", ");
}

/**
 * @param queue queued groups in FIFO order (already filtered for staleness)
 */
export function packBatch(
  queue: readonly QueuedGroupRef[],
  batchSize: number,
  allocations: readonly EnvAllocation[] = [],
): PackResult {
  if (batchSize < 1)
    return { ok: false, reason: "the trainer has not registered a batch_size yet" };
  const usable = queue.filter((g) => g.size >= 1 && g.size <= batchSize);
  const oversized = queue.length - usable.length;
  const oversizedNote =
    oversized > 0
      ? `; ${oversized} queued group(s) have more sequences than batch_size ${batchSize} and can never be batched`
      : "";
  const total = usable.reduce((s, g) => s + g.size, 0);
  if (total < batchSize) {
    return {
      ok: false,
      reason: `waiting for data: ${total} batchable sequence(s) queued, batch_size is ${batchSize}${oversizedNote}`,
    };
  }

  const taken = new Set<number>();
  let sum = 0;
  if (allocations.length > 0) {
    const smallest = new Map<number, number>();
    for (const g of usable) {
      if (g.envId === null) continue;
      const s = smallest.get(g.envId);
      if (s === undefined || g.size < s) smallest.set(g.envId, g.size);
    }
    const mins = minimumSequences(batchSize, allocations, smallest);
    for (const a of allocations) {
      const need = mins.get(a.envId) ?? 0;
      if (need <= 0) continue;
      let got = 0;
      for (const g of usable) {
        if (got >= need) break;
        if (g.envId !== a.envId || sum + g.size > batchSize) continue;
        taken.add(g.id);
        got += g.size;
        sum += g.size;
      }
      if (got < need) {
        return {
          ok: false,
          reason: `env '${a.name}' (env_id ${a.envId}) has min_batch_allocation ${a.fraction} and needs ${need} sequence(s) per batch, but only ${got} can be taken from its queue`,
        };
      }
    }
  }

  const rest = usable.filter((g) => !taken.has(g.id));
  const chosen = earliestExactSubset(
    rest.map((g) => g.size),
    batchSize - sum,
  );
  if (!chosen) {
    return {
      ok: false,
      reason: `no combination of queued group sizes sums to batch_size ${batchSize} (queued: ${describeSizes(usable)})${oversizedNote}`,
    };
  }
  for (const i of chosen) taken.add(rest[i]!.id);
  const ids = usable.filter((g) => taken.has(g.id)).map((g) => g.id);
  return { ok: true, ids, sequences: batchSize };
}
