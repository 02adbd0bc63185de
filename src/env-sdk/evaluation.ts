/**
 * Evaluation with k samples per item: avg@k (the mean correctness of every sample) and pass@j,
 * the chance that at least one of j samples is correct, with the unbiased estimator
 * 1 − C(n−c, j) / C(n, j) per item (n samples of which c correct), averaged over items.
 */

/** Unbiased pass@k of one item with `correct` of `samples` samples correct (k ≤ samples). */
export function passAtK(samples: number, correct: number, k: number): number {
  if (k < 1 || k > samples) throw new Error(`pass@${k} needs 1 ≤ k ≤ ${samples} samples`);
  if (samples - correct < k) return 1;
  // C(n−c, k) / C(n, k) as a product, which stays exact enough for any n.
  let allWrong = 1;
  for (let i = samples - correct + 1; i <= samples; i++) allWrong *= 1 - k / i;
  return 1 - allWrong;
}

/** The k values reported for n samples: 1, the powers of two below n, and n. */
export function reportedKs(samples: number): number[] {
  const ks = new Set<number>([1, samples]);
  for (let k = 2; k < samples; k *= 2) ks.add(k);
  return [...ks].sort((a, b) => a - b);
}

/**
 * `eval/avg@n` and `eval/pass@j` (j from reportedKs) over items that were each sampled
 * `samples` times; `correct[i]` is how many of item i's samples were correct.
 */
export function samplesPerItemMetrics(
  correct: readonly number[],
  samples: number,
): Record<string, number> {
  if (correct.length === 0) return {};
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const metrics: Record<string, number> = {
    [`eval/avg@${samples}`]: mean(correct.map((c) => c / samples)),
  };
  for (const k of reportedKs(samples)) {
    metrics[`eval/pass@${k}`] = mean(correct.map((c) => passAtK(samples, c, k)));
  }
  return metrics;
}
