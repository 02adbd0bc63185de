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

export interface LearningSummary {
  envs: Record<string, { steps: StepRecord[] }>;
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
          return [env, { steps }];
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

export function writeLearningSummary(path: string, summary: LearningSummary): void {
  writeFileSync(path, `${JSON.stringify(summary, null, 2)}\n`);
}
