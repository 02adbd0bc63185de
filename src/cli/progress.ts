/**
 * Live progress of `start`: one block redrawn in place with plain ANSI on a TTY, one line per
 * update otherwise (logs, CI).
 */
import type { RunStats } from "../client/trainer-client";

export interface TrainerProgress {
  step: number;
  targetSteps: number;
  elapsedS: number;
  batches: number;
  sequences: number;
  meanScore: number | null;
  /** Policy versions between sampling and training, over the last batch. */
  staleness: { mean: number; max: number } | null;
  lastReason: string | null;
  problems: number;
}

function num(n: number | null | undefined, digits = 2): string {
  return typeof n === "number" && Number.isFinite(n) ? n.toFixed(digits) : "–";
}

export function progressLines(p: TrainerProgress, stats: RunStats | null): string[] {
  const rate = (n: number) => (p.elapsedS > 0 ? n / p.elapsedS : 0);
  const lines = [
    `step ${p.step}/${p.targetSteps}  ${num(rate(p.batches))} batches/s  ${num(rate(p.sequences), 1)} rollouts/s  mean score ${num(p.meanScore, 3)}  staleness ${p.staleness ? `${num(p.staleness.mean, 1)} (max ${p.staleness.max})` : "–"}  ${p.elapsedS.toFixed(0)}s`,
  ];
  if (stats) {
    const depth = new Map(stats.queue.by_env.map((e) => [e.env_id, e]));
    for (const env of stats.envs) {
      const q = depth.get(env.env_id);
      lines.push(
        `  ${env.name.padEnd(20)} ${env.status.padEnd(12)} queued ${String(q?.groups ?? 0).padStart(4)} groups  submitted ${String(env.groups_submitted).padStart(5)}  mean score ${num(env.mean_score, 3)}`,
      );
    }
  }
  if (p.lastReason) lines.push(`  waiting: ${p.lastReason}`);
  if (p.problems > 0) lines.push(`  shape problems: ${p.problems}`);
  return lines;
}

export class ProgressPrinter {
  private drawn = 0;
  constructor(private readonly out: NodeJS.WriteStream) {}

  get interactive(): boolean {
    return this.out.isTTY === true;
  }

  draw(lines: string[]): void {
    if (!this.interactive) {
      this.out.write(`${lines.join(" |")}\n`);
      return;
    }
    // Move to the start of the previous block, clear to the end of the screen, redraw.
    const up = this.drawn > 0 ? `\x1b[${this.drawn}F` : "";
    const width = this.out.columns ?? 120;
    this.out.write(`${up}\x1b[0J${lines.map((l) => l.slice(0, width - 1)).join("\n")}\n`);
    this.drawn = lines.length;
  }

  /** Forget the block so the next output starts below it. */
  release(): void {
    this.drawn = 0;
  }
}
