/**
 * The simulator's toy policy: a stand-in for an LLM small enough to train on a CPU in seconds.
 *
 * For each prompt the simulator finds a set of candidate answers (registered by the env's
 * `simulate`, or the generic mix). The policy is a softmax over candidates whose logit is one
 * learned weight per (env, candidate label) — nothing else. Its log-probabilities are exact:
 * log π(candidate) = logit − logsumexp(logits of the item's candidates). The simulator spreads
 * that number evenly over the answer's tokens, so the token logprobs of a finished answer sum to
 * the true log-probability of having chosen it (a real LLM factorises it per token; this toy has
 * no per-token distribution to report).
 *
 * Weights move only through `loadWeights` (the `/update_weights_from_disk` route); the trainer
 * computes the update itself (see src/cli/demo-trainer.ts).
 */
import type { SimCandidate, SimulatedItem, SimulationSink } from "../env-sdk/simulate";

export type PolicyWeights = Record<string, number>;

/** The file a trainer writes and `/update_weights_from_disk` reads. */
export interface PolicyWeightsFile {
  format: typeof WEIGHTS_FORMAT;
  weights: PolicyWeights;
}
export const WEIGHTS_FORMAT = "atropos-edge-toy-policy/1";

/** What the trainer needs to know about one sampled answer (the in-process side channel). */
export interface PolicySample {
  /** Weight key of every candidate the answer was chosen from, in order. */
  keys: string[];
  chosen: number;
  /** log π(chosen) under the weights that served it. */
  logprob: number;
  /** Weight version that served it. */
  version: number;
}

export interface PolicyChoice extends PolicySample {
  text: string;
}

export function weightKey(env: string, candidate: SimCandidate): string {
  return `${env}/${candidate.label ?? candidate.text}`;
}

export function logSoftmax(logits: number[]): number[] {
  const max = Math.max(...logits);
  const logSum = max + Math.log(logits.reduce((sum, l) => sum + Math.exp(l - max), 0));
  return logits.map((l) => l - logSum);
}

export function logitsOf(weights: PolicyWeights, keys: string[]): number[] {
  return keys.map((key) => weights[key] ?? 0);
}

/** Per-token logprobs of an answer of `tokens` tokens whose total log-probability is `total`. */
export function splitLogprob(total: number, tokens: number): number[] {
  return Array.from({ length: tokens }, () => total / tokens);
}

/** Index drawn from exp(logprobs) with u ∈ [0, 1); greedy (argmax) when temperature is 0. */
export function sampleIndex(logprobs: number[], u: number, temperature = 1): number {
  if (temperature <= 0) return logprobs.indexOf(Math.max(...logprobs));
  const scaled = logSoftmax(logprobs.map((lp) => lp / temperature)).map(Math.exp);
  let acc = 0;
  for (let i = 0; i < scaled.length; i++) {
    acc += scaled[i]!;
    if (u < acc) return i;
  }
  return scaled.length - 1;
}

export interface WeightedSample {
  sample: Pick<PolicySample, "keys" | "chosen">;
  /** GRPO advantage of the sequence this answer belongs to. */
  advantage: number;
  /** log π_old(chosen): the logprob reported at sampling time (for the importance ratio). */
  oldLogprob: number;
}

/**
 * Gradient (ascent direction) of the clipped GRPO/PPO surrogate, averaged over `samples`:
 * for each answer, A·r·(onehot(chosen) − π) on its candidates' logits, where r = π/π_old, and
 * zero where the ratio is already clipped in the advantage's direction.
 */
export function policyGradient(
  weights: PolicyWeights,
  samples: WeightedSample[],
  clip = 0.2,
): PolicyWeights {
  const grad: PolicyWeights = {};
  if (samples.length === 0) return grad;
  for (const { sample, advantage, oldLogprob } of samples) {
    if (advantage === 0) continue;
    const logprobs = logSoftmax(logitsOf(weights, sample.keys));
    const ratio = Math.exp(logprobs[sample.chosen]! - oldLogprob);
    if ((advantage > 0 && ratio > 1 + clip) || (advantage < 0 && ratio < 1 - clip)) continue;
    sample.keys.forEach((key, i) => {
      const indicator = i === sample.chosen ? 1 : 0;
      const g = (advantage * ratio * (indicator - Math.exp(logprobs[i]!))) / samples.length;
      grad[key] = (grad[key] ?? 0) + g;
    });
  }
  return grad;
}

/**
 * Logits live in [−LOGIT_BOUND, LOGIT_BOUND]: the toy policy never becomes certain, so groups
 * keep some variance (an LLM sampled at temperature 1 keeps exploring the same way). Without it
 * the policy saturates within ~30 steps and nearly every group is dropped for identical scores.
 */
export const LOGIT_BOUND = 1.5;

/** w + lr·g projected onto the logit bounds (a fresh object; keys only in g start at 0). */
export function applyGradient(
  weights: PolicyWeights,
  grad: PolicyWeights,
  learningRate: number,
): PolicyWeights {
  const next = { ...weights };
  for (const [key, g] of Object.entries(grad)) {
    const w = (next[key] ?? 0) + learningRate * g;
    next[key] = Math.max(-LOGIT_BOUND, Math.min(LOGIT_BOUND, w));
  }
  return next;
}

export function parseWeightsFile(text: string): PolicyWeights {
  const parsed = JSON.parse(text) as Partial<PolicyWeightsFile>;
  if (parsed?.format !== WEIGHTS_FORMAT || !parsed.weights || typeof parsed.weights !== "object")
    throw new Error(`not a ${WEIGHTS_FORMAT} file (needs {"format", "weights": {key: number}})`);
  for (const [key, value] of Object.entries(parsed.weights)) {
    if (typeof value !== "number" || !Number.isFinite(value))
      throw new Error(`weight "${key}" must be a finite number`);
  }
  return parsed.weights;
}

interface Registration {
  env: string;
  simulated: SimulatedItem;
}

export const MAX_REGISTRATIONS = 4096;
const MAX_LOGGED_SAMPLES = 200_000;

export class ToyPolicy implements SimulationSink {
  private weights: PolicyWeights = {};
  private weightVersion = 0;
  private readonly registrations: Registration[] = [];
  /** Candidate distributions computed under the weights of their time, until flushed. */
  private readonly cache = new Map<string, number[]>();
  /** Completion token ids → what was sampled (several when different prompts gave the same ids). */
  private readonly log = new Map<string, (PolicySample & { promptTail: string })[]>();

  get version(): number {
    return this.weightVersion;
  }

  currentWeights(): PolicyWeights {
    return { ...this.weights };
  }

  register(env: string, simulated: SimulatedItem): void {
    this.registrations.push({ env, simulated });
    if (this.registrations.length > MAX_REGISTRATIONS) this.registrations.shift();
  }

  /** Candidates for a prompt: the most recent registration whose `match` occurs in it. */
  candidatesFor(promptText: string): { env: string; candidates: SimCandidate[] } | null {
    for (let i = this.registrations.length - 1; i >= 0; i--) {
      const { env, simulated } = this.registrations[i]!;
      if (!simulated.match || !promptText.includes(simulated.match)) continue;
      const candidates =
        typeof simulated.candidates === "function"
          ? simulated.candidates(promptText)
          : simulated.candidates;
      if (candidates.length > 0) return { env, candidates };
    }
    return null;
  }

  /** Sample one candidate with u ∈ [0, 1). */
  choose(env: string, candidates: SimCandidate[], u: number, temperature = 1): PolicyChoice {
    const keys = candidates.map((c) => weightKey(env, c));
    const cacheKey = keys.join("\u0000");
    let logprobs = this.cache.get(cacheKey);
    if (!logprobs) {
      logprobs = logSoftmax(logitsOf(this.weights, keys));
      this.cache.set(cacheKey, logprobs);
    }
    const chosen = sampleIndex(logprobs, u, temperature);
    return {
      text: candidates[chosen]!.text,
      keys,
      chosen,
      logprob: logprobs[chosen]!,
      version: this.weightVersion,
    };
  }

  /** Remember which candidate produced these completion ids (read back by the trainer). */
  logSample(promptIds: number[], completionIds: number[], sample: PolicySample): void {
    const key = completionIds.join(",");
    const entries = this.log.get(key) ?? [];
    entries.push({ ...sample, promptTail: promptTail(promptIds) });
    this.log.delete(key);
    this.log.set(key, entries.slice(-8));
    if (this.log.size > MAX_LOGGED_SAMPLES) this.log.delete(this.log.keys().next().value!);
  }

  /** The sample behind a completion, preferring the one sampled after the same prompt. */
  lookup(promptIds: number[], completionIds: number[]): PolicySample | null {
    const entries = this.log.get(completionIds.join(","));
    if (!entries) return null;
    const tail = promptTail(promptIds);
    return entries.findLast((e) => e.promptTail === tail) ?? entries.at(-1) ?? null;
  }

  loadWeights(weights: PolicyWeights, version?: number, flushCache = true): number {
    this.weights = { ...weights };
    this.weightVersion = version ?? this.weightVersion + 1;
    if (flushCache) this.flushCache();
    return this.weightVersion;
  }

  flushCache(): void {
    this.cache.clear();
  }
}

function promptTail(ids: number[]): string {
  return ids.slice(-64).join(",");
}
