/**
 * Regression guard: each evaluation metric of each env has a baseline (its first value, or one
 * set through the API); an evaluation below factor × baseline is a regression, and the run's
 * configured action answers it. Metrics are taken as higher-is-better unless the run names them
 * lower-is-better (a loss, an error rate): those regress above baseline ÷ factor. A metric whose
 * baseline is not above 0 is not guarded (a factor of a non-positive baseline has no "below").
 */
import { z } from "zod";

export const guardActionSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("alert") }).describe("Only record the event (and POST the webhook)."),
  z
    .object({
      type: z.literal("raise_replay"),
      fraction: z.number().min(0).max(0.9),
    })
    .describe("Turn the replay buffer on with this fraction (kept if already higher)."),
  z
    .object({
      type: z.literal("set_weights"),
      weights: z.record(z.string().regex(/^\d+$/, "keys are env ids"), z.number().positive()),
    })
    .describe("Set these envs' weights (env id → weight)."),
  z
    .object({ type: z.literal("pause_env"), env_id: z.number().int().min(0) })
    .describe("Pause one env."),
]);
export type GuardAction = z.infer<typeof guardActionSchema>;

export const DEFAULT_GUARD_FACTOR = 0.95;

export interface Regression {
  envId: number;
  step: number;
  metric: string;
  value: number;
  baseline: number;
  /** factor × baseline (or baseline ÷ factor when lower is better): the value had to reach this. */
  threshold: number;
  lowerIsBetter: boolean;
}

export interface GuardCheck {
  /** Metrics seen for the first time: their value becomes the baseline. */
  newBaselines: { metric: string; value: number }[];
  regressions: Regression[];
}

/** Whether `metric` is one of `names` (an entry ending in `*` names a prefix). */
export function metricMatches(metric: string, names: readonly string[]): boolean {
  return names.some((n) => (n.endsWith("*") ? metric.startsWith(n.slice(0, -1)) : metric === n));
}

/**
 * Compares one evaluation with the env's baselines (metric → value).
 * @param baselines the env's baselines before this evaluation
 * @param lowerIsBetter metric names (`*` suffix: prefix) where smaller values are better
 */
export function checkEvaluation(
  baselines: ReadonlyMap<string, number>,
  envId: number,
  step: number,
  metrics: Readonly<Record<string, number>>,
  factor: number,
  lowerIsBetter: readonly string[] = [],
): GuardCheck {
  const newBaselines: GuardCheck["newBaselines"] = [];
  const regressions: Regression[] = [];
  for (const [metric, value] of Object.entries(metrics)) {
    if (!Number.isFinite(value)) continue;
    const baseline = baselines.get(metric);
    if (baseline === undefined) {
      newBaselines.push({ metric, value });
      continue;
    }
    if (baseline <= 0) continue;
    if (metricMatches(metric, lowerIsBetter)) {
      const threshold = baseline / factor;
      if (value > threshold) {
        regressions.push({ envId, step, metric, value, baseline, threshold, lowerIsBetter: true });
      }
      continue;
    }
    const threshold = factor * baseline;
    if (value < threshold) {
      regressions.push({ envId, step, metric, value, baseline, threshold, lowerIsBetter: false });
    }
  }
  return { newBaselines, regressions };
}

/** One line for the event log and the webhook. */
export function describeRegression(r: Regression, action: GuardAction): string {
  const what: Record<GuardAction["type"], string> = {
    alert: "alert only",
    raise_replay: "replay fraction raised",
    set_weights: "env weights changed",
    pause_env: "env paused",
  };
  const crossed = r.lowerIsBetter ? "rose above" : "fell below";
  return `env ${r.envId} ${r.metric} = ${r.value} at step ${r.step} ${crossed} ${r.threshold} (baseline ${r.baseline}); ${what[action.type]}`;
}
