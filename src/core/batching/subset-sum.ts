/**
 * Exact subset sums that prefer the oldest items: used to pack batches whose sequence count
 * must equal the trainer's batch size, and to release buffered partial groups.
 */

/**
 * Indices (ascending) of the lexicographically earliest subset of `sizes` that sums exactly to
 * `target`, or null. O(n · target / 32) time and memory using suffix-reachability bitsets.
 */
export function earliestExactSubset(sizes: readonly number[], target: number): number[] | null {
  if (target === 0) return [];
  if (target < 0) return null;
  const n = sizes.length;
  const words = (target >>> 5) + 1;
  // reach[i] = bitset of sums reachable with items i..n-1.
  const reach = new Uint32Array((n + 1) * words);
  reach[n * words] = 1; // sum 0 with no items
  for (let i = n - 1; i >= 0; i--) {
    const size = sizes[i] ?? 0;
    const dst = i * words;
    const src = (i + 1) * words;
    for (let w = 0; w < words; w++) reach[dst + w] = reach[src + w] ?? 0;
    if (size <= 0 || size > target) continue;
    const wordShift = size >>> 5;
    const bitShift = size & 31;
    for (let w = words - 1; w >= wordShift; w--) {
      const lo = reach[src + w - wordShift] ?? 0;
      const hi = bitShift && w - wordShift - 1 >= 0 ? (reach[src + w - wordShift - 1] ?? 0) : 0;
      const shifted = bitShift ? ((lo << bitShift) | (hi >>> (32 - bitShift))) >>> 0 : lo;
      reach[dst + w] = ((reach[dst + w] ?? 0) | shifted) >>> 0;
    }
  }
  const has = (row: number, sum: number) =>
    (((reach[row * words + (sum >>> 5)] ?? 0) >>> (sum & 31)) & 1) === 1;
  if (!has(0, target)) return null;
  const chosen: number[] = [];
  let remaining = target;
  for (let i = 0; i < n && remaining > 0; i++) {
    const size = sizes[i] ?? 0;
    if (size > 0 && size <= remaining && has(i + 1, remaining - size)) {
      chosen.push(i);
      remaining -= size;
    }
  }
  return chosen;
}
