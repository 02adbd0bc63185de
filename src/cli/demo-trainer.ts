/**
 * The demo trainer's work on a batch: verify every group has the shapes a real trainer indexes
 * (tokens/masks/logprobs/scores line up), compute GRPO advantages, and — against the local
 * simulator — take a real policy-gradient step on the simulator's toy policy and push the new
 * weights the way a trainer updates SGLang (`/update_weights_from_disk` + `/flush_cache`).
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ScoredDataGroup } from "../core/wire/group-types";
import {
  applyGradient,
  type PolicySample,
  type PolicyWeights,
  type PolicyWeightsFile,
  policyGradient,
  WEIGHTS_FORMAT,
  type WeightedSample,
} from "../sim/policy";

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

/** Reads back which candidate produced a completion (the simulator's in-process side channel). */
export interface SampleLookup {
  lookup(promptIds: number[], completionIds: number[]): PolicySample | null;
}

const PROMPT_MASK = -100;

/** [start, end) of each trainable (masked-in) run of a sequence: one sampled completion each. */
export function completionSpans(masks: number[]): [number, number][] {
  const spans: [number, number][] = [];
  let start = -1;
  masks.forEach((m, i) => {
    if (m !== PROMPT_MASK && start < 0) start = i;
    if (m === PROMPT_MASK && start >= 0) {
      spans.push([start, i]);
      start = -1;
    }
  });
  if (start >= 0) spans.push([start, masks.length]);
  return spans;
}

/** Every sampled answer of a batch with its sequence's GRPO advantage and sampling logprob. */
export function weightedSamples(
  groups: ScoredDataGroup[],
  lookup: SampleLookup,
): { samples: WeightedSample[]; unmatched: number } {
  const samples: WeightedSample[] = [];
  let unmatched = 0;
  for (const group of groups) {
    const advantages = grpoAdvantages(group.scores ?? []);
    group.tokens.forEach((tokens, i) => {
      for (const [start, end] of completionSpans(group.masks[i] ?? [])) {
        const sample = lookup.lookup(tokens.slice(0, start), tokens.slice(start, end));
        if (!sample) {
          unmatched++;
          continue;
        }
        const logprobs = group.inference_logprobs?.[i]?.slice(start, end);
        const oldLogprob = logprobs?.length ? logprobs.reduce((a, b) => a + b, 0) : sample.logprob;
        samples.push({ sample, advantage: advantages[i] ?? 0, oldLogprob });
      }
    });
  }
  return { samples, unmatched };
}

export interface PolicyTrainerOptions {
  /** The simulator's root URL. */
  simulatorUrl: string;
  lookup: SampleLookup;
  learningRate: number;
  /** Where weight files are written for the simulator to load. */
  weightsDir: string;
  /** PPO-style ratio clip (default 0.2). */
  clip?: number;
  fetch?: typeof fetch;
}

export interface PolicyStepResult {
  samples: number;
  /** Completions the simulator did not sample with its toy policy (scripted answers). */
  unmatched: number;
  gradNorm: number;
}

/** Trains the simulator's toy policy: GRPO gradient steps, then a weight push per version. */
export class ToyPolicyTrainer {
  weights: PolicyWeights = {};
  private readonly doFetch: typeof fetch;

  constructor(private readonly options: PolicyTrainerOptions) {
    this.doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  step(groups: ScoredDataGroup[]): PolicyStepResult {
    const { samples, unmatched } = weightedSamples(groups, this.options.lookup);
    const grad = policyGradient(this.weights, samples, this.options.clip ?? 0.2);
    this.weights = applyGradient(this.weights, grad, this.options.learningRate);
    const gradNorm = Math.sqrt(Object.values(grad).reduce((a, g) => a + g * g, 0));
    return { samples: samples.length, unmatched, gradNorm };
  }

  /** Write the weights, have the simulator load them as `version`, flush its cache. */
  async push(version: number): Promise<void> {
    const path = join(this.options.weightsDir, `policy-v${version}.json`);
    const file: PolicyWeightsFile = { format: WEIGHTS_FORMAT, weights: this.weights };
    await writeFile(path, JSON.stringify(file));
    const base = this.options.simulatorUrl.replace(/\/+$/, "");
    const post = async (route: string, body: unknown) => {
      const res = await this.doFetch(`${base}${route}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`POST ${route}: HTTP ${res.status} ${text.slice(0, 300)}`);
    };
    await post("/update_weights_from_disk", {
      model_path: path,
      weight_version: String(version),
      flush_cache: false,
    });
    await post("/flush_cache", {});
  }
}
