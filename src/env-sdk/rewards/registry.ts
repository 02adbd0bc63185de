/**
 * Reward registry and weighted combination. Fixes the Atropos registry bugs (docs/REWARDS.md): every name
 * maps to exactly the class registered under it (no alphabetical module scan), all built-ins are
 * available without lazy loading, and sub-reward weights are honoured by `combined`.
 */
import { AccuracyReward } from "./accuracy";
import { FormatReward, ThinkingFormatReward } from "./format";
import { LengthPenaltyReward } from "./length-penalty";
import { ReasoningStepsReward } from "./reasoning-steps";
import { RepetitionPenaltyReward } from "./repetition";
import { type Completion, type RewardContext, type RewardFunction, weightedScores } from "./types";

/** A reward by name, or `{type, weight?, params?}`. */
export type RewardSpec =
  | string
  | { type: string; weight?: number; params?: Record<string, unknown> };

export type RewardFactory = (
  params: Record<string, unknown> & { weight?: number },
) => RewardFunction;

export type Normalization = "none" | "sum" | "minmax";

/** Σ weight_i × reward_i; "sum" divides by Σ weights, "minmax" rescales the batch to [0, 1]. */
export class CombinedReward implements RewardFunction {
  readonly name = "combined";
  readonly weight: number;
  readonly rewards: RewardFunction[];
  private readonly normalization: Normalization;

  constructor(
    rewards: RewardFunction[],
    options: { weight?: number; normalization?: Normalization } = {},
  ) {
    this.rewards = rewards;
    this.weight = options.weight ?? 1;
    this.normalization = options.normalization ?? "none";
  }

  compute(completions: Completion[], context: RewardContext = {}): number[] {
    const totals = completions.map(() => 0);
    for (const reward of this.rewards) {
      let values: number[];
      try {
        values = reward.compute(completions, context);
      } catch {
        continue; // one broken sub-reward must not sink the others
      }
      values.forEach((v, i) => {
        totals[i]! += v * reward.weight;
      });
    }
    if (this.normalization === "sum") {
      const sum = this.rewards.reduce((a, r) => a + r.weight, 0);
      return sum === 0 ? totals : totals.map((t) => t / sum);
    }
    if (this.normalization === "minmax") {
      const lo = Math.min(...totals);
      const hi = Math.max(...totals);
      return hi === lo ? totals.map(() => 0.5) : totals.map((t) => (t - lo) / (hi - lo));
    }
    return totals;
  }
}

export class RewardRegistry {
  private readonly factories = new Map<string, RewardFactory>();

  register(name: string, factory: RewardFactory): this {
    this.factories.set(normalizeName(name), factory);
    return this;
  }

  has(name: string): boolean {
    return this.factories.has(normalizeName(name));
  }

  names(): string[] {
    return [...this.factories.keys()].sort();
  }

  create(spec: RewardSpec, defaults: Record<string, unknown> = {}): RewardFunction {
    const { type, weight, params } =
      typeof spec === "string" ? { type: spec, weight: undefined, params: {} } : spec;
    const key = normalizeName(type);
    if (key === "combined") {
      const p = { ...defaults, ...params };
      const subs = (p.rewards as RewardSpec[] | undefined) ?? [];
      return new CombinedReward(
        subs.map((s) => this.create(s)),
        {
          weight: weight ?? (p.weight as number | undefined),
          normalization: p.normalization as Normalization,
        },
      );
    }
    const factory = this.factories.get(key);
    if (!factory) {
      throw new Error(`unknown reward "${type}"; available: ${this.names().join(", ")}, combined`);
    }
    return factory({ ...defaults, ...params, ...(weight === undefined ? {} : { weight }) });
  }

  /** Score completions with a spec (weighted; exceptions → zeros). */
  score(spec: RewardSpec, completions: Completion[], context: RewardContext = {}): number[] {
    return weightedScores(this.create(spec), completions, context);
  }
}

/** "ReasoningSteps", "reasoning_steps", "reasoningsteps" and "reasoning-steps" are one name. */
function normalizeName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[-_\s]/g, "")
    .replace(/reward$/, "");
}

// why: factories receive loosely-typed YAML params; each class validates what it reads.
type Loose = Record<string, unknown>;

export const rewardRegistry = new RewardRegistry()
  .register("accuracy", (p: Loose) => new AccuracyReward(p))
  .register("format", (p: Loose) => new FormatReward(p))
  .register("thinking_format", (p: Loose) => new ThinkingFormatReward(p))
  .register("format_reasoning", (p: Loose) => new ThinkingFormatReward({ rewardValue: 0.5, ...p }))
  .register("reasoning_steps", (p: Loose) => new ReasoningStepsReward(p))
  .register("repetition_penalty", (p: Loose) => new RepetitionPenaltyReward(p))
  .register("length_penalty", (p: Loose) => new LengthPenaltyReward(p))
  .register(
    "r1",
    (p: Loose) =>
      new CombinedReward(
        [
          new ThinkingFormatReward({ weight: Number(p.format_weight ?? 0.5) }),
          new AccuracyReward({ weight: Number(p.accuracy_weight ?? 1) }),
        ],
        { weight: p.weight as number | undefined },
      ),
  );
