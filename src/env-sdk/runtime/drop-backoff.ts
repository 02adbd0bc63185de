/**
 * When an env's groups keep being dropped (typically a reward that gives every answer the same
 * score), generating more of them only burns inference: after `threshold` consecutive drops the
 * runtime starts at most one item per `minIntervalMs` and reports why every `reportEveryMs`,
 * until a group is submitted again.
 */
export interface DropBackoffOptions {
  threshold?: number;
  minIntervalMs?: number;
  reportEveryMs?: number;
  now?: () => number;
  /** Where a previous instance left off (a Durable Object persists it between ticks). */
  state?: DropBackoffState;
}

/** What a DropBackoff must remember across restarts (timestamps in ms; null: never). */
export interface DropBackoffState {
  consecutive: number;
  lastSpawnAt: number | null;
  lastReportAt: number | null;
}

export class DropBackoff {
  private consecutive = 0;
  private lastSpawnAt = Number.NEGATIVE_INFINITY;
  private lastReportAt = Number.NEGATIVE_INFINITY;
  private readonly threshold: number;
  private readonly minIntervalMs: number;
  private readonly reportEveryMs: number;
  private readonly now: () => number;

  constructor(options: DropBackoffOptions = {}) {
    this.threshold = options.threshold ?? 200;
    this.minIntervalMs = options.minIntervalMs ?? 1000;
    this.reportEveryMs = options.reportEveryMs ?? 10_000;
    this.now = options.now ?? Date.now;
    if (options.state) {
      this.consecutive = options.state.consecutive;
      this.lastSpawnAt = options.state.lastSpawnAt ?? Number.NEGATIVE_INFINITY;
      this.lastReportAt = options.state.lastReportAt ?? Number.NEGATIVE_INFINITY;
    }
  }

  snapshot(): DropBackoffState {
    const finite = (t: number) => (Number.isFinite(t) ? t : null);
    return {
      consecutive: this.consecutive,
      lastSpawnAt: finite(this.lastSpawnAt),
      lastReportAt: finite(this.lastReportAt),
    };
  }

  get active(): boolean {
    return this.consecutive >= this.threshold;
  }

  /** Counts a drop; returns the line to print when backing off and a report is due. */
  dropped(reason: string): string | null {
    this.consecutive++;
    if (!this.active || this.now() - this.lastReportAt < this.reportEveryMs) return null;
    this.lastReportAt = this.now();
    const hint = reason.startsWith("all scores identical")
      ? ": your reward gives every answer the same score"
      : "";
    return `${reason} in the last ${this.threshold} groups${hint}; backing off to 1 item/s until a group is kept`;
  }

  /** A group was submitted: full speed again. */
  kept(): void {
    this.consecutive = 0;
    this.lastReportAt = Number.NEGATIVE_INFINITY;
  }

  /** Whether another item may start now (records the start when it may). */
  maySpawn(): boolean {
    if (!this.active) return true;
    if (this.now() - this.lastSpawnAt < this.minIntervalMs) return false;
    this.lastSpawnAt = this.now();
    return true;
  }
}
