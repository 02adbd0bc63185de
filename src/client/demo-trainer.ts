/**
 * What the demo trainer does with a batch instead of a gradient step: verify every group has the
 * shapes a real trainer indexes (tokens/masks/logprobs/scores line up) and compute GRPO advantages.
 */
import type { ScoredDataGroup } from "../core/group-types";

/** Group-relative advantages: (score − mean) / (std + eps), population std as in GRPO. */
export function grpoAdvantages(scores: number[], eps = 1e-6): number[] {
  if (scores.length === 0) return [];
  const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
  const variance = scores.reduce((a, s) => a + (s - mean) ** 2, 0) / scores.length;
  const std = Math.sqrt(variance);
  return scores.map((s) => (s - mean) / (std + eps));
}

/** Every shape problem of one group; empty when a trainer could consume it as is. */
export function groupShapeProblems(group: ScoredDataGroup): string[] {
  const problems: string[] = [];
  const n = group.tokens?.length ?? 0;
  if (n === 0) problems.push("tokens is empty");
  if (group.masks?.length !== n)
    problems.push(`masks has ${group.masks?.length} rows, tokens ${n}`);
  if (group.scores?.length !== n) problems.push(`scores has ${group.scores?.length}, tokens ${n}`);
  for (let i = 0; i < n; i++) {
    const len = group.tokens[i]?.length ?? 0;
    if (group.masks?.[i]?.length !== len) problems.push(`masks[${i}] length ≠ tokens[${i}] length`);
    const lp = group.inference_logprobs?.[i];
    if (lp && lp.length !== len) problems.push(`inference_logprobs[${i}] length ≠ tokens[${i}]`);
  }
  if (group.inference_logprobs && group.inference_logprobs.length !== n) {
    problems.push(`inference_logprobs has ${group.inference_logprobs.length} rows, tokens ${n}`);
  }
  if (group.scores?.some((s) => !Number.isFinite(s))) problems.push("a score is not finite");
  return problems;
}

export interface TrainStepResult {
  groups: number;
  sequences: number;
  trainableTokens: number;
  meanScore: number;
  /** Mean |advantage|: 0 means the batch carried no learning signal. */
  meanAbsAdvantage: number;
  problems: string[];
}

/** The demo "training step" on one batch. */
export function demoTrainStep(groups: ScoredDataGroup[]): TrainStepResult {
  let sequences = 0;
  let trainableTokens = 0;
  let scoreSum = 0;
  let advSum = 0;
  const problems: string[] = [];
  groups.forEach((group, g) => {
    for (const p of groupShapeProblems(group)) problems.push(`group ${g}: ${p}`);
    const advantages = grpoAdvantages(group.scores ?? []);
    sequences += group.scores?.length ?? 0;
    scoreSum += (group.scores ?? []).reduce((a, b) => a + b, 0);
    advSum += advantages.reduce((a, b) => a + Math.abs(b), 0);
    for (const mask of group.masks ?? []) trainableTokens += mask.filter((t) => t !== -100).length;
  });
  return {
    groups: groups.length,
    sequences,
    trainableTokens,
    meanScore: sequences ? scoreSum / sequences : 0,
    meanAbsAdvantage: sequences ? advSum / sequences : 0,
    problems,
  };
}
