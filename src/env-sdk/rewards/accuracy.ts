/** Math accuracy: 1 when the response's final answer equals the gold answer, else 0. */
import { answersEquivalent, extractBoxed, extractFinalAnswer, extractGoldAnswer } from "./math";
import {
  afterThinking,
  type Completion,
  getContent,
  perCompletion,
  type RewardContext,
  type RewardFunction,
} from "./types";

export interface AccuracyOptions {
  weight?: number;
  tolerance?: number;
  /** Score only the text after the last </think>. */
  splitOnThinkTag?: boolean;
  /** More \boxed{} than this in the answer counts as hedging → 0. */
  maxBoxed?: number;
}

export class AccuracyReward implements RewardFunction {
  readonly name = "accuracy";
  readonly weight: number;
  private readonly tolerance: number;
  private readonly splitOnThinkTag: boolean;
  private readonly maxBoxed: number;

  constructor(options: AccuracyOptions = {}) {
    this.weight = options.weight ?? 1;
    this.tolerance = options.tolerance ?? 1e-6;
    this.splitOnThinkTag = options.splitOnThinkTag ?? true;
    this.maxBoxed = options.maxBoxed ?? 6;
  }

  /** context.solution or context.ground_truth: a string (or one per completion). */
  compute(completions: Completion[], context: RewardContext = {}): number[] {
    return completions.map((completion, i) => {
      const gold = perCompletion(
        (context.ground_truth ?? context.solution) as string | string[] | undefined,
        i,
      );
      if (gold === undefined || gold === null) return 0;
      return this.score(getContent(completion), String(gold)) ? 1 : 0;
    });
  }

  score(response: string, gold: string): boolean {
    const text = this.splitOnThinkTag ? afterThinking(response) : response;
    if (extractBoxed(text).length > this.maxBoxed) return false;
    const answer = extractFinalAnswer(text);
    return answer !== null && answersEquivalent(answer, extractGoldAnswer(gold), this.tolerance);
  }
}
