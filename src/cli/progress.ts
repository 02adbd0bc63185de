/**
 * Live progress and the final summary of `start`. Both are built here from the same numbers, so
 * the last progress block and the summary always agree. On a TTY the block is redrawn in place
 * with plain ANSI, wrapped (never cut) at the terminal width; otherwise one line per update.
 */
import type { RunStats } from "../client/trainer-client";
import type { FeederSummary } from "../worker/env-feeder";

export interface TrainerProgress {
  step: number;
  targetSteps: number;
  /** Seconds of training (from the first lease attempt to the last step). */
  elapsedS: number;
  batches: number;
  sequences: number;
  /** Mean score of every rollout trained so far (cumulative). */
  meanScore: number | null;
  /** Mean score over the last RECENT_STEPS steps trained (null before the first). */
  recentMeanScore?: number | null;
  /** Policy versions between sampling and training, over the last batch. */
  staleness: { mean: number; max: number } | null;
  lastReason: string | null;
  problems: number;
}

/** One env the run started, as its runtime saw it. */
export interface EnvActivity {
  name: string;
  /** Known once the env registered with the API. */
  envId: number | null;
  /** Node runtime: groups the env dropped before sending them. */
  droppedBeforeSend?: number;
  /** Node runtime: items that failed with an error. */
  failed?: number;
  /** Node runtime: items that finished, failed ones included. */
  finishedItems?: number;
  errors?: string[];
  /** Worker path: the EnvFeeder's own counts (per item), null until the first poll. */
  feeder?: FeederSummary | null;
  pollError?: string | null;
}

/** The per-env numbers printed by both the progress block and the summary. */
export interface EnvCounts {
  name: string;
  status: string;
  /** Groups the API stored for this env. D1 is the record: this is the one "submitted" count. */
  submitted: number;
  /** Of those, not yet delivered in a batch. */
  queued: number;
  meanScore: number | null;
  /**
   * Worker path: items (one prompt each) issued by the EnvFeeder. An item that ran yields groups
   * that were either submitted or rejected by send-side validation, so `ran` and `submitted`
   * differ by the rejected groups, and by items in flight whose group is stored but not yet
   * reported to the feeder.
   */
  items: {
    issued: number;
    inFlight: number;
    ran: number;
    rejectedGroups: number;
    failed: number;
    dropped: number;
  } | null;
  /** Node runtime: groups dropped by the env before sending. */
  droppedBeforeSend: number | null;
  /** Node runtime: items that failed with an error (null on the Worker path, see items). */
  failedInNode: number | null;
  /** Node runtime: items that finished (ran or failed). */
  finishedInNode: number | null;
  /** Failed items / finished items (either runtime), null before any finished. */
  failedShare: number | null;
  problem: string | null;
}

/** Steps the progress line's recent mean covers. */
export const RECENT_STEPS = 10;

const share = (x: number) => `${(100 * x).toFixed(1)}%`;

function num(n: number | null | undefined, digits = 2): string {
  return typeof n === "number" && Number.isFinite(n) ? n.toFixed(digits) : "–";
}

/** Joins each started env to the API's record in one stats snapshot. */
export function envCounts(envs: EnvActivity[], stats: RunStats | null): EnvCounts[] {
  return envs.map((e) => {
    const envId = e.envId ?? e.feeder?.env_id ?? null;
    const record =
      stats?.envs.find((s) => s.env_id === envId) ??
      (envId === null ? stats?.envs.find((s) => s.name === e.name) : undefined);
    const queue = record ? stats?.queue.by_env.find((q) => q.env_id === record.env_id) : undefined;
    const f = e.feeder;
    const worker = e.feeder !== undefined;
    const failed = worker ? (f?.failed ?? 0) : (e.failed ?? 0);
    const finished = worker ? (f ? f.succeeded + f.failed : 0) : (e.finishedItems ?? e.failed ?? 0);
    return {
      name: e.name,
      status: f?.status ?? record?.status ?? "starting",
      submitted: record?.groups_submitted ?? 0,
      queued: queue?.groups ?? 0,
      meanScore: record?.mean_score ?? null,
      items: f
        ? {
            issued: f.issued,
            inFlight: f.in_flight,
            ran: f.succeeded,
            rejectedGroups: f.rejected,
            failed: f.failed,
            dropped: f.dropped,
          }
        : null,
      droppedBeforeSend: worker ? null : (e.droppedBeforeSend ?? 0),
      failedInNode: worker ? null : (e.failed ?? 0),
      finishedInNode: worker ? null : (e.finishedItems ?? e.failed ?? 0),
      failedShare: finished > 0 ? failed / finished : null,
      problem:
        f?.last_error ??
        e.errors?.at(-1) ??
        (worker && !f ? `no status yet${e.pollError ? ` (${e.pollError})` : ""}` : null),
    };
  });
}

/** One env's numbers, worded the same in the progress block and the summary. */
export function envCountsLine(c: EnvCounts): string {
  const parts = [
    c.name.padEnd(16),
    c.status.padEnd(12),
    `submitted ${c.submitted} groups`,
    `queued ${c.queued}`,
    `mean score ${num(c.meanScore, 3)}`,
  ];
  if (c.items) {
    const i = c.items;
    parts.push(
      `items on the Worker: issued ${i.issued}, in flight ${i.inFlight}, ran ${i.ran} (${i.rejectedGroups} group${i.rejectedGroups === 1 ? "" : "s"} rejected), failed ${i.failed}${i.failed > 0 && c.failedShare !== null ? ` (${share(c.failedShare)})` : ""}, dropped ${i.dropped}`,
    );
  }
  if (c.droppedBeforeSend !== null) {
    // Why matters more than how many: a reward that scores every answer alike drops every group.
    const why = " (equal scores or env drops)";
    parts.push(
      `dropped ${c.droppedBeforeSend} before sending${c.droppedBeforeSend > 0 ? why : ""}`,
    );
  }
  if (c.failedInNode) {
    parts.push(
      `failed ${c.failedInNode} of ${c.finishedInNode} items${c.failedShare !== null ? ` (${share(c.failedShare)})` : ""}`,
    );
  }
  if (c.problem) parts.push(`last error: ${c.problem}`);
  return parts.join("  ");
}

/** Mean score over the last RECENT_STEPS trained steps, weighted by rollouts. */
export class RecentMean {
  private readonly steps: { sum: number; n: number }[] = [];

  /** Adds one step's batch; returns the mean over the window (null with no rollouts). */
  add(meanScore: number, rollouts: number): number | null {
    this.steps.push({ sum: meanScore * rollouts, n: rollouts });
    if (this.steps.length > RECENT_STEPS) this.steps.shift();
    const n = this.steps.reduce((a, s) => a + s.n, 0);
    return n > 0 ? this.steps.reduce((a, s) => a + s.sum, 0) / n : null;
  }
}

/** Rates over the training time: the one definition used live and in the summary. */
export function trainingRates(p: TrainerProgress) {
  const per = (n: number) => (p.elapsedS > 0 ? n / p.elapsedS : 0);
  return { batchesPerS: per(p.batches), rolloutsPerS: per(p.sequences) };
}

export function progressLines(p: TrainerProgress, envs: EnvCounts[]): string[] {
  const rates = trainingRates(p);
  const lines = [
    `step ${p.step}/${p.targetSteps}  ${num(rates.batchesPerS)} batches/s  ${num(rates.rolloutsPerS, 1)} rollouts/s  mean score ${num(p.recentMeanScore, 3)} last ${RECENT_STEPS} steps, ${num(p.meanScore, 3)} cumulative  staleness ${p.staleness ? `${num(p.staleness.mean, 1)} (batch max ${p.staleness.max})` : "–"}  ${p.elapsedS.toFixed(0)}s`,
    ...envs.map((c) => `  ${envCountsLine(c)}`),
  ];
  if (p.lastReason) lines.push(`  waiting: ${p.lastReason}`);
  if (p.problems > 0) lines.push(`  shape problems: ${p.problems}`);
  return lines;
}

/** Failed items over every env (Node and Worker counts alike). */
function failedItems(envs: EnvCounts[]): { failed: number; finished: number } {
  let failed = 0;
  let finished = 0;
  for (const c of envs) {
    const f = c.items ? c.items.failed : (c.failedInNode ?? 0);
    failed += f;
    finished += c.items ? c.items.ran + c.items.failed : (c.finishedInNode ?? 0);
  }
  return { failed, finished };
}

export function summaryLines(
  p: TrainerProgress,
  envs: EnvCounts[],
  run: { command: string; stopped: boolean; totalS: number },
): string[] {
  const rates = trainingRates(p);
  const items = failedItems(envs);
  const failedShare = items.finished > 0 ? items.failed / items.finished : 0;
  return [
    "",
    `── atropos-edge ${run.command}: summary ──`,
    `steps trained     ${p.step}/${p.targetSteps}${run.stopped ? " (stopped by signal)" : ""}`,
    `elapsed           ${p.elapsedS.toFixed(1)} s training, ${run.totalS.toFixed(1)} s total`,
    `batches/s         ${num(rates.batchesPerS)}`,
    `rollouts trained  ${p.sequences} (${num(rates.rolloutsPerS, 1)}/s)`,
    `mean score        ${num(p.meanScore, 3)}${items.failed > 0 ? ` (successful items only: the ${items.failed} failed items have no score)` : ""}`,
    `failed items      ${items.failed} of ${items.finished}${items.finished > 0 ? ` (${share(failedShare)})` : ""}`,
    `shape problems    ${p.problems}`,
    ...envs.map((c) => `env ${envCountsLine(c)}`),
  ];
}

/**
 * `line` as rows of at most `width - 1` characters, broken between fields (two or more spaces)
 * or, in a field too long for a row, between words; never inside a word, so no number is cut.
 * A word longer than a row gets a row of its own. Continuation rows are indented.
 */
export function wrapLine(line: string, width: number): string[] {
  const max = Math.max(width - 1, 10);
  if (line.length <= max) return [line];
  const indent = /^ */.exec(line)![0];
  const next = `${indent}    `.slice(0, Math.floor(max / 2));
  // Whole fields where they fit a row, else their words; each with the separator before it.
  const words: { text: string; sep: string }[] = [];
  line
    .slice(indent.length)
    .split(/ {2,}/)
    .forEach((field, f) => {
      const parts = next.length + field.length <= max ? [field] : field.split(" ");
      parts.forEach((text, w) => {
        if (text) words.push({ text, sep: w > 0 ? " " : f > 0 ? "  " : "" });
      });
    });
  const rows: string[] = [];
  let row = indent;
  let rowHasWord = false;
  for (const { text, sep } of words) {
    if (rowHasWord && row.length + sep.length + text.length > max) {
      rows.push(row);
      row = next + text;
    } else {
      row += (rowHasWord ? sep : "") + text;
    }
    rowHasWord = true;
  }
  rows.push(row);
  return rows;
}

/** Terminal rows a printed row occupies (an over-long word soft-wraps). */
function screenRows(row: string, width: number): number {
  return Math.max(1, Math.ceil(row.length / Math.max(width, 1)));
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
    const width = this.out.columns || 120;
    const rows = lines.flatMap((l) => wrapLine(l, width));
    this.out.write(`${up}\x1b[0J${rows.join("\n")}\n`);
    this.drawn = rows.reduce((sum, r) => sum + screenRows(r, width), 0);
  }

  /** Forget the block so the next output starts below it. */
  release(): void {
    this.drawn = 0;
  }
}
