/** Advantage utilities: GRPO group normalisation and process supervision (Atropos utils/advantages). */

/** Mean and population variance over a jagged nested list of numbers. */
export function computeStats(nested: readonly (number | readonly number[])[]): {
  mean: number;
  variance: number;
} {
  const flat = nested.flat(Number.POSITIVE_INFINITY as 1) as number[];
  if (flat.length === 0) throw new Error("computeStats: no values");
  if (!flat.every((v) => typeof v === "number" && !Number.isNaN(v))) {
    throw new Error("computeStats: non-numeric value");
  }
  const mean = flat.reduce((a, b) => a + b, 0) / flat.length;
  const variance = flat.reduce((a, b) => a + (b - mean) ** 2, 0) / flat.length;
  return { mean, variance };
}

/** GRPO: (score − mean) / (std + eps) within the group; all-equal groups → zeros. */
export function grpoAdvantages(
  scores: readonly number[],
  options: { eps?: number; scaleByStd?: boolean } = {},
): number[] {
  if (scores.length === 0) return [];
  const { mean, variance } = computeStats(scores);
  const std = Math.sqrt(variance);
  const eps = options.eps ?? 1e-6;
  if (std < eps) return scores.map(() => 0);
  return scores.map((s) => (options.scaleByStd === false ? s - mean : (s - mean) / (std + eps)));
}

/** Reverse accumulation G_t = r_t + γ·G_{t+1}. */
export function discountedReturns(rewards: readonly number[], gamma: number): number[] {
  const out = new Array<number>(rewards.length).fill(0);
  let running = 0;
  for (let t = rewards.length - 1; t >= 0; t--) {
    running = rewards[t]! + gamma * running;
    out[t] = running;
  }
  return out;
}

/**
 * Process supervision: normalise every step reward by the mean/std over all steps of all
 * trajectories, then per trajectory take the reverse cumulative sum (γ = 1 when omitted) or the
 * discounted returns. When std < stdTol the original raises; `onZeroStd: "zeros"` returns zeros.
 */
export function processSupervisionAdvantages(
  rewards: readonly (readonly number[])[],
  options: { gamma?: number; stdTol?: number; onZeroStd?: "throw" | "zeros" } = {},
): number[][] {
  const { mean, variance } = computeStats(rewards.map((r) => [...r]));
  const std = Math.sqrt(variance);
  if (std < (options.stdTol ?? 1e-8)) {
    if (options.onZeroStd === "zeros") return rewards.map((r) => r.map(() => 0));
    throw new Error("processSupervisionAdvantages: step rewards have ~zero std");
  }
  return rewards.map((traj) =>
    discountedReturns(
      traj.map((r) => (r - mean) / std),
      options.gamma ?? 1,
    ),
  );
}

/**
 * Spread per-turn advantages onto token positions: the k-th contiguous run of trainable
 * positions (mask ≠ -100) gets stepAdvantages[k] (runs past the last step reuse the last value);
 * prompt positions get 0.
 */
export function advantagesPerToken(
  masks: readonly number[],
  stepAdvantages: readonly number[],
): number[] {
  const out = new Array<number>(masks.length).fill(0);
  let run = -1;
  let inRun = false;
  for (let i = 0; i < masks.length; i++) {
    const trainable = masks[i] !== -100;
    if (trainable && !inRun) run++;
    inRun = trainable;
    if (trainable && stepAdvantages.length > 0) {
      out[i] = stepAdvantages[Math.min(run, stepAdvantages.length - 1)]!;
    }
  }
  return out;
}

/** Whether every value is close to the first (numpy.allclose semantics). */
export function allCloseToFirst(values: readonly number[], rtol = 1e-5, atol = 1e-8): boolean {
  if (values.length === 0) return true;
  const first = values[0]!;
  return values.every((v) => Math.abs(v - first) <= atol + rtol * Math.abs(first));
}
