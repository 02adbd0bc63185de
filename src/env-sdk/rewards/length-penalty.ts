/** The "no penalty below 50 % of max length, linear to 0 at max" rule used by many Atropos envs. */
import { type Completion, perCompletion, type RewardContext, type RewardFunction } from "./types";

/** Multiplier in [0, 1]: 1 up to threshold × max, linear down to 0 at max (and beyond). */
export function thresholdLengthFactor(length: number, maxLength: number, threshold = 0.5): number {
  if (maxLength <= 0) return 1;
  const start = threshold * maxLength;
  if (length <= start) return 1;
  if (length >= maxLength) return 0;
  return 1 - (length - start) / (maxLength - start);
}

/**
 * Atropos GSM8K rule: when every rollout is correct, scale scores by the length factor so shorter
 * correct answers win; otherwise leave scores untouched.
 */
export function applyLengthPenaltyIfAllCorrect(
  scores: number[],
  lengths: number[],
  maxLength: number,
  correctScore = 1,
  threshold = 0.5,
): number[] {
  if (!scores.every((s) => s >= correctScore)) return scores;
  return scores.map((s, i) => s * thresholdLengthFactor(lengths[i] ?? 0, maxLength, threshold));
}

export interface LengthPenaltyOptions {
  weight?: number;
  threshold?: number;
}

/** context.lengths (per completion, tokens) and context.max_length; returns the factor. */
export class LengthPenaltyReward implements RewardFunction {
  readonly name = "length_penalty";
  readonly weight: number;
  private readonly threshold: number;

  constructor(options: LengthPenaltyOptions = {}) {
    this.weight = options.weight ?? 1;
    this.threshold = options.threshold ?? 0.5;
  }

  compute(completions: Completion[], context: RewardContext = {}): number[] {
    const max = Number(context.max_length ?? 0);
    return completions.map((c, i) => {
      const given = perCompletion(context.lengths as number | number[] | undefined, i);
      const length =
        typeof given === "number" ? given : typeof c === "string" ? c.split(/\s+/).length : 0;
      return thresholdLengthFactor(length, max, this.threshold);
    });
  }
}
