/**
 * The serve loop's metric reports: a step's env metrics (the env's metrics() and that step's drops
 * by reason) and evaluations, sent to the rollout API one at a time in step order without holding
 * up the loop. An API without the metrics route (Atropos' own server) stops the reporting.
 */
import { errorMessage } from "../../core/errors";
import { ApiError, type RolloutApiClient } from "./api-client";
import { countDrop } from "./rollout-core";
import type { ServeEvent } from "./serve-types";

export class ServeMetricReporter {
  /** Drops since the last step change, reported with that step's metrics. */
  private stepDrops: Record<string, number> = {};
  private reporting = true;
  private reports: Promise<void> = Promise.resolve();

  constructor(
    private readonly api: RolloutApiClient,
    private readonly envId: number,
    private readonly emit: (event: ServeEvent) => void,
  ) {}

  /** A drop of the current step, reported with its metrics. */
  dropped(reason: string): void {
    countDrop(this.stepDrops, reason);
  }

  report(step: number, kind: "env" | "eval", metrics: Record<string, number>): void {
    if (Object.keys(metrics).length === 0) return;
    this.emit({ type: "metrics", step, kind, metrics });
    this.reports = this.reports.then(async () => {
      if (!this.reporting) return;
      try {
        // No signal: the last step's report is sent while the loop is being stopped.
        await this.api.reportMetrics(this.envId, { step, kind, metrics });
      } catch (err) {
        // An API without the metrics route (Atropos' own server) will never have it.
        if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
          this.reporting = false;
        }
        this.emit({
          type: "metrics_error",
          message: errorMessage(err),
        });
      }
    });
  }

  /** The env's metrics() and the drops by reason of the step that just ended. */
  reportStep(step: number, envMetrics: Record<string, number>): void {
    const drops = Object.fromEntries(
      // Metric names are at most 200 characters.
      Object.entries(this.stepDrops).map(([reason, n]) => [`drops/${reason}`.slice(0, 200), n]),
    );
    this.stepDrops = {};
    this.report(step, "env", { ...envMetrics, ...drops });
  }

  /** Settles when every report queued so far was sent (or failed). */
  settled(): Promise<void> {
    return this.reports;
  }
}
