/** Rewards visible step-by-step structure (step labels, numbered lists, bullets, transitions). */
import { type Completion, getContent, type RewardFunction } from "./types";

export interface ReasoningStepsOptions {
  weight?: number;
  minWords?: number;
  minSteps?: number;
  baseScore?: number;
  patternWeights?: Partial<Record<StepPattern, number>>;
}

export type StepPattern = "step_labels" | "numbered_list" | "bullets" | "transitions";

const PATTERNS: Record<StepPattern, RegExp> = {
  step_labels: /\bstep\s*\d+\s*[:.)]/gi,
  numbered_list: /^\s*\d+[.)]\s+\S/gm,
  bullets: /^\s*[-*•]\s+\S/gm,
  transitions: /\b(?:first(?:ly)?|second(?:ly)?|then|next|finally|therefore|thus|so|hence)\b/gi,
};

const DEFAULT_WEIGHTS: Record<StepPattern, number> = {
  step_labels: 0.5,
  numbered_list: 0.5,
  bullets: 0.4,
  transitions: 0.3,
};

/** Σ over patterns of min(1, matches/minSteps) × weight, + baseScore if long enough; ≤ 1. */
export class ReasoningStepsReward implements RewardFunction {
  readonly name = "reasoning_steps";
  readonly weight: number;
  private readonly minWords: number;
  private readonly minSteps: number;
  private readonly baseScore: number;
  private readonly weights: Record<StepPattern, number>;

  constructor(options: ReasoningStepsOptions = {}) {
    this.weight = options.weight ?? 1;
    this.minWords = options.minWords ?? 10;
    this.minSteps = options.minSteps ?? 3;
    this.baseScore = options.baseScore ?? 0.1;
    this.weights = { ...DEFAULT_WEIGHTS, ...options.patternWeights };
  }

  compute(completions: Completion[]): number[] {
    return completions.map((c) => {
      const text = getContent(c);
      let score = 0;
      for (const key of Object.keys(PATTERNS) as StepPattern[]) {
        const matches = text.match(PATTERNS[key])?.length ?? 0;
        score += Math.min(1, matches / this.minSteps) * this.weights[key];
      }
      const words = text.split(/\s+/).filter(Boolean).length;
      if (words > this.minWords) score += this.baseScore;
      return Math.min(1, score);
    });
  }
}
