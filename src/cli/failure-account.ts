/**
 * Items that failed with an error, per env, for `start`. A failed item produces no group, so the
 * scores a run reports cover only the items that succeeded: when many fail (often the long or
 * hard ones) the score is inflated. The run's verdict fails it above a share of failed items
 * (default 10 %) unless --allow-failures, naming the most frequent error and where it was thrown.
 */
import { relative } from "node:path";
import { PROJECT_ROOT } from "./dev-process";

export const DEFAULT_MAX_FAILURE_RATE = 0.1;

export interface FailurePolicy {
  /** Largest share of failed items a run may have and still succeed (0–1). */
  maxFailureRate: number;
  allowFailures: boolean;
}

interface ErrorTally {
  message: string;
  /** file:line of the frame that threw, when the stack names one outside the runtime. */
  location: string | null;
  count: number;
}

interface EnvTally {
  ran: number;
  failed: number;
  errors: Map<string, ErrorTally>;
}

/** This package's runtime folders: its frames are never where an env's bug is. */
const RUNTIME_DIRS = [
  "/src/env-sdk/",
  "/src/inference/",
  "/src/sandbox/",
  "/src/cli/",
  "/src/sim/",
  "/src/core/",
];

function isRuntimeFrame(file: string): boolean {
  if (file.includes("/node_modules/")) return true;
  if (!file.startsWith(PROJECT_ROOT)) return false;
  const inPackage = file.slice(PROJECT_ROOT.length);
  return RUNTIME_DIRS.some((dir) => inPackage.startsWith(dir));
}

/**
 * The `file:line` of the first stack frame outside the runtime (an env's own code), relative to
 * `cwd` when below it; null when the stack names none.
 */
export function errorLocation(error: unknown, cwd: string = process.cwd()): string | null {
  const stack = error instanceof Error ? error.stack : undefined;
  if (!stack) return null;
  for (const line of stack.split("\n").slice(1)) {
    // tsx runs a .ts file outside an ESM package from a data: URL: the file, but no usable line.
    const inline = /[?&]filePath=([^):&]+)/.exec(line);
    if (inline) {
      const file = decodeURIComponent(inline[1]!);
      if (!isRuntimeFrame(file)) return file.startsWith(cwd) ? relative(cwd, file) : file;
      continue;
    }
    const match = /(?:\(|at )((?:file:\/\/)?\/[^():]+|[A-Za-z]:\\[^():]+):(\d+):\d+\)?\s*$/.exec(
      line,
    );
    if (!match) continue;
    const file = match[1]!.replace(/^file:\/\//, "");
    if (isRuntimeFrame(file)) continue;
    const shown = file.startsWith(cwd) ? relative(cwd, file) : file;
    return `${shown}:${match[2]}`;
  }
  return null;
}

export class FailureAccount {
  private readonly envs = new Map<string, EnvTally>();

  private tally(env: string): EnvTally {
    const t = this.envs.get(env) ?? { ran: 0, failed: 0, errors: new Map() };
    this.envs.set(env, t);
    return t;
  }

  ran(env: string): void {
    this.tally(env).ran++;
  }

  failed(env: string, message: string, error?: unknown): void {
    const t = this.tally(env);
    t.failed++;
    const location = errorLocation(error);
    const key = `${message}\u0000${location ?? ""}`;
    const e = t.errors.get(key) ?? { message, location, count: 0 };
    e.count++;
    t.errors.set(key, e);
  }

  /** An env whose items ran in the Worker: its EnvFeeder's counts (none before its first poll). */
  setFeederCounts(
    env: string,
    feeder: { succeeded: number; failed: number; last_error: string | null } | null,
  ): void {
    if (!feeder) return;
    const t = this.tally(env);
    t.ran = feeder.succeeded;
    t.failed = feeder.failed;
    t.errors.clear();
    if (feeder.failed > 0) {
      const message = feeder.last_error ?? "unknown error";
      t.errors.set("", { message, location: null, count: feeder.failed });
    }
  }

  /** Items of one env that finished (ran or failed), and how many failed. */
  counts(env: string): { items: number; failed: number } {
    const t = this.envs.get(env);
    return { items: (t?.ran ?? 0) + (t?.failed ?? 0), failed: t?.failed ?? 0 };
  }

  /** The most frequent error of an env, worded `message (at file:line)`. */
  topError(env: string): string | null {
    const errors = [...(this.envs.get(env)?.errors.values() ?? [])];
    const top = errors.sort((a, b) => b.count - a.count)[0];
    if (!top) return null;
    const others = errors.length > 1 ? `; ${errors.length - 1} other error(s)` : "";
    return `${top.message}${top.location ? ` (at ${top.location})` : ""}, ${top.count}×${others}`;
  }

  totals(): { items: number; failed: number } {
    let items = 0;
    let failed = 0;
    for (const env of this.envs.keys()) {
      const c = this.counts(env);
      items += c.items;
      failed += c.failed;
    }
    return { items, failed };
  }

  /** Why the run fails for its failed items, or null. */
  verdict(policy: FailurePolicy): string | null {
    if (policy.allowFailures) return null;
    const over = [...this.envs.keys()].filter((env) => {
      const c = this.counts(env);
      return c.failed > 0 && c.failed / c.items > policy.maxFailureRate;
    });
    if (over.length === 0) return null;
    const limit = formatShare(policy.maxFailureRate);
    const parts = over.map((env) => {
      const c = this.counts(env);
      return `${env}: ${c.failed} of ${c.items} items failed (${formatShare(c.failed / c.items)}), ${this.topError(env)}`;
    });
    return `${parts.join("; ")}. More than ${limit} of the items failed (--max-failure-rate ${policy.maxFailureRate}): the scores cover only the items that succeeded. Fix the error, or pass --allow-failures to accept them`;
  }
}

/** The policy of `start`'s options (--max-failure-rate, --allow-failures). */
export function failurePolicy(options: {
  maxFailureRate?: number;
  allowFailures?: boolean;
}): FailurePolicy {
  return {
    maxFailureRate: options.maxFailureRate ?? DEFAULT_MAX_FAILURE_RATE,
    allowFailures: options.allowFailures === true,
  };
}

export function formatShare(share: number): string {
  return `${(100 * share).toFixed(share > 0 && share < 0.01 ? 2 : 1)}%`;
}

/** `--max-failure-rate`: a share of items in [0, 1]. */
export function parseFailureRate(value: unknown): number {
  const rate = Number(value);
  if (!Number.isFinite(rate) || rate < 0 || rate > 1) {
    throw new Error(
      `--max-failure-rate must be a share of items between 0 and 1 (e.g. 0.1 = 10 %), not ${String(value)}`,
    );
  }
  return rate;
}
