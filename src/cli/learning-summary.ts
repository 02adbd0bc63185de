/**
 * Per-step learning curve of `atropos-edge start` (--summary-json): every rollout an env
 * generated while the trainer worked on step s counts for step s, including groups later dropped
 * for identical scores, so convergence (all-correct groups being dropped) stays visible.
 */
import { writeFileSync } from "node:fs";

export interface StepRecord {
  step: number;
  /** Share of rollouts with a score above 0 (null when the env produced none that step). */
  accuracy: number | null;
  mean_score: number | null;
  rollouts: number;
  dropped_groups: number;
}

/** Rollouts of a run of consecutive steps, pooled (every rollout weighs the same). */
export interface StepWindow {
  from_step: number;
  to_step: number;
  rollouts: number;
  accuracy: number | null;
  mean_score: number | null;
}

/** The rise of one env: its first and its last RISE_STEPS steps (fewer in a short run). */
export interface EnvRise {
  first: StepWindow;
  last: StepWindow;
}

/** Steps at each end of a run that the rise compares. */
export const RISE_STEPS = 10;

export interface LearningSummary {
  envs: Record<string, { steps: StepRecord[]; rise: EnvRise | null }>;
  policy_versions: { announced: number; simulator: number | null; pushes: number };
  staleness: { mean: number | null; max: number | null; per_step: StalenessRecord[] };
  learning_rate: number;
}

export interface StalenessRecord {
  step: number;
  mean: number;
  max: number;
}

interface Tally {
  rollouts: number;
  correct: number;
  scoreSum: number;
  dropped: number;
}

export class LearningRecorder {
  private readonly tallies = new Map<string, Map<number, Tally>>();
  private readonly staleness: StalenessRecord[] = [];
  pushes = 0;

  constructor(private readonly currentStep: () => number) {}

  private tally(env: string): Tally {
    const perStep = this.tallies.get(env) ?? new Map<number, Tally>();
    this.tallies.set(env, perStep);
    const step = this.currentStep();
    const t = perStep.get(step) ?? { rollouts: 0, correct: 0, scoreSum: 0, dropped: 0 };
    perStep.set(step, t);
    return t;
  }

  groups(env: string, scores: number[][]): void {
    const t = this.tally(env);
    for (const s of scores.flat()) {
      t.rollouts++;
      t.scoreSum += s;
      if (s > 0) t.correct++;
    }
  }

  dropped(env: string): void {
    this.tally(env).dropped++;
  }

  stepStaleness(step: number, stale: number[]): void {
    if (stale.length === 0) return;
    this.staleness.push({
      step,
      mean: stale.reduce((a, b) => a + b, 0) / stale.length,
      max: Math.max(...stale),
    });
  }

  summary(
    envs: string[],
    stepsTrained: number,
    versions: { announced: number; simulator: number | null },
    learningRate: number,
  ): LearningSummary {
    const all = this.staleness;
    return {
      envs: Object.fromEntries(
        envs.map((env) => {
          const perStep = this.tallies.get(env) ?? new Map<number, Tally>();
          const steps = Array.from({ length: stepsTrained }, (_, i) => {
            const t = perStep.get(i + 1) ?? { rollouts: 0, correct: 0, scoreSum: 0, dropped: 0 };
            return {
              step: i + 1,
              accuracy: t.rollouts ? t.correct / t.rollouts : null,
              mean_score: t.rollouts ? t.scoreSum / t.rollouts : null,
              rollouts: t.rollouts,
              dropped_groups: t.dropped,
            };
          });
          return [env, { steps, rise: riseOf(steps) }];
        }),
      ),
      policy_versions: { ...versions, pushes: this.pushes },
      staleness: {
        mean: all.length ? all.reduce((a, s) => a + s.mean, 0) / all.length : null,
        max: all.length ? Math.max(...all.map((s) => s.max)) : null,
        per_step: all,
      },
      learning_rate: learningRate,
    };
  }
}

function pooled(steps: StepRecord[]): StepWindow {
  let rollouts = 0;
  let correct = 0;
  let scoreSum = 0;
  for (const s of steps) {
    rollouts += s.rollouts;
    correct += (s.accuracy ?? 0) * s.rollouts;
    scoreSum += (s.mean_score ?? 0) * s.rollouts;
  }
  return {
    from_step: steps[0]?.step ?? 0,
    to_step: steps.at(-1)?.step ?? 0,
    rollouts,
    accuracy: rollouts ? correct / rollouts : null,
    mean_score: rollouts ? scoreSum / rollouts : null,
  };
}

/**
 * The first and last `n` steps (half the run each when it is shorter than 2n steps; one step
 * compares with itself), or null before any step.
 */
export function riseOf(steps: StepRecord[], n: number = RISE_STEPS): EnvRise | null {
  if (steps.length === 0) return null;
  const size = Math.max(1, Math.min(n, Math.floor(steps.length / 2)));
  return { first: pooled(steps.slice(0, size)), last: pooled(steps.slice(-size)) };
}

const fixed = (x: number | null, digits: number) => (x === null ? "–" : x.toFixed(digits));
const percent = (x: number | null) => (x === null ? "–" : `${(100 * x).toFixed(0)}%`);
const describeWindow = (w: StepWindow) =>
  `${fixed(w.mean_score, 3)} / ${percent(w.accuracy)} (${w.from_step === w.to_step ? `step ${w.from_step}` : `steps ${w.from_step}–${w.to_step}`})`;

/** The summary's rise lines: per env, mean score / accuracy over the first → the last steps. */
export function riseLines(summary: LearningSummary): string[] {
  const rows = Object.entries(summary.envs).flatMap(([env, { rise }]) =>
    rise
      ? [`  ${env.padEnd(16)} ${describeWindow(rise.first)} → ${describeWindow(rise.last)}`]
      : [],
  );
  if (rows.length === 0) return [];
  return ["rise per env      mean score / accuracy, first steps → last steps:", ...rows];
}

export function writeLearningSummary(path: string, summary: LearningSummary): void {
  writeFileSync(path, `${JSON.stringify(summary, null, 2)}\n`);
}
