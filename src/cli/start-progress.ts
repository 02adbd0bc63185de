/**
 * `start`'s progress view: the trainer's numbers, the envs' activity, the block redrawn every
 * second (with a status poll of the API and the env workers) and the final summary.
 */
import type { RunStats, TrainerClient } from "../client/trainer-client";
import type { TrainStepResult } from "./demo-trainer";
import type { LearningRecorder } from "./learning-summary";
import {
  type EnvActivity,
  envCounts,
  ProgressPrinter,
  progressLines,
  RecentMean,
  summaryLines,
  type TrainerProgress,
} from "./progress";
import type { EnvRun } from "./start-node-envs";
import { newBackoffReport, type WorkerEnvs } from "./start-worker-envs";

export class StartProgress {
  readonly progress: TrainerProgress;
  /** The API's counts, as last polled. */
  stats: RunStats | null = null;
  private scoreSum = 0;
  private readonly recent = new RecentMean();
  private readonly printer: ProgressPrinter;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly out: NodeJS.WriteStream,
    targetSteps: number,
    private readonly envRuns: EnvRun[],
    /** null: the envs run in Node. */
    private readonly workerEnvs: WorkerEnvs | null,
    private readonly finishedItems: (env: string) => number,
  ) {
    this.printer = new ProgressPrinter(out);
    this.progress = {
      step: 0,
      targetSteps,
      elapsedS: 0,
      batches: 0,
      sequences: 0,
      meanScore: null,
      staleness: null,
      lastReason: null,
      problems: 0,
    };
  }

  private activity(): EnvActivity[] {
    return [
      ...this.envRuns.map((r) => ({
        name: r.name,
        envId: r.envId,
        droppedBeforeSend: r.dropped,
        failed: r.failed,
        finishedItems: this.finishedItems(r.name),
        errors: r.errors,
      })),
      ...(this.workerEnvs?.runs ?? []).map((e) => ({
        name: e.name,
        envId: e.summary?.env_id ?? null,
        feeder: e.summary,
        pollError: e.pollError,
      })),
    ];
  }

  draw(): void {
    this.printer.draw(progressLines(this.progress, envCounts(this.activity(), this.stats)));
  }

  /** A trained step's numbers. */
  stepDone(result: TrainStepResult): void {
    const p = this.progress;
    p.step++;
    p.batches++;
    p.sequences += result.sequences;
    p.problems += result.problems.length;
    this.scoreSum += result.meanScore * result.sequences;
    p.meanScore = p.sequences ? this.scoreSum / p.sequences : null;
    p.recentMeanScore = this.recent.add(result.meanScore, result.sequences);
  }

  /**
   * Redraws every second from `started`, polling the API's stats and the env workers (one poll
   * at a time); each feeder's new back-off reason is printed and its drops go to the curve.
   */
  startTicker(started: number, trainer: TrainerClient, learning: LearningRecorder): void {
    let polling = false;
    this.timer = setInterval(() => {
      this.progress.elapsedS = (Date.now() - started) / 1000;
      this.draw();
      if (polling) return;
      polling = true;
      Promise.allSettled([
        trainer.stats().then((s) => {
          this.stats = s;
        }),
        this.workerEnvs?.pollAll(),
      ]).finally(() => {
        polling = false;
        for (const e of this.workerEnvs?.runs ?? []) {
          const line = newBackoffReport(e);
          if (line) this.out.write(`\n${line}\n`);
          // The feeder counts drops per item report: they go to the step in progress.
          const drops = (e.summary?.dropped ?? 0) + (e.summary?.rejected ?? 0);
          for (let i = e.dropsRecorded ?? 0; i < drops; i++) learning.dropped(e.name);
          e.dropsRecorded = Math.max(e.dropsRecorded ?? 0, drops);
        }
      });
    }, 1000);
  }

  stopTicker(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** The last block, drawn once more with the final stats, then the terminal is left alone. */
  finalDraw(trainer: TrainerClient): Promise<void> {
    return trainer
      .stats()
      .then((s) => {
        this.stats = s;
      })
      .catch(() => {})
      .then(() => {
        this.draw();
        this.printer.release();
      });
  }

  summary(options: { command: string; stopped: boolean; totalS: number }): string[] {
    return summaryLines(this.progress, envCounts(this.activity(), this.stats), options);
  }
}
