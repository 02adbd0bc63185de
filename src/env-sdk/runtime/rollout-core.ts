/**
 * One rollout item, the same way in every runtime (Node `serveEnv`, `processEnv`, the Worker's
 * queue consumer): collectTrajectories → postprocessHistories → recordScores → send-side
 * validation → the caller's submit. Every outcome is a value, never a throw, in one of three
 * classes the runtimes act on:
 * - dropped: on purpose (DropGroupError), no group returned, or every group failed a send-side
 *   rule that depends on the sample (identical scores, wrong size, too long). Counted by reason;
 *   never retried.
 * - retryable: the world failed (network, timeouts, 5xx/408/429 from inference or the API). The
 *   queue retries with backoff; Node runtimes count a worker error (inference already retried).
 * - permanent: a bug or a group that can never be valid (TypeError, 4xx, ragged tokens/masks).
 *   Retrying cannot help: the queue records a dead letter at once.
 * Unknown errors are retryable: retries are bounded, and a dead letter still records the item.
 */
import { errorMessage } from "../../core/errors";
import type { ScoredDataGroup } from "../../core/wire/group-types";
import { type BaseEnv, DropGroupError, groupsOf, type JsonValue } from "../base-env";
import type { BaseEnvConfig } from "../config";
import { type SendValidationOptions, validateGroupForSend } from "../send-validation";

export type RolloutErrorClass = "drop" | "retryable" | "permanent";

/** A group that breaks a structural rule (ragged tokens/masks, non-finite scores): an env bug. */
export class InvalidGroupError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "InvalidGroupError";
  }
}

/** A step ran past its time limit (worker_timeout). */
export class RolloutTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TimeoutError";
  }
}

/** Names of built-in errors that only a bug throws. */
const BUG_NAMES = new Set([
  "ReferenceError",
  "SyntaxError",
  "RangeError",
  "EvalError",
  "URIError",
  "ZodError",
  "InvalidGroupError",
]);

/**
 * The TypeErrors of a bug (V8's wording). fetch reports network failures as TypeErrors too
 * ("fetch failed", "Network connection lost"), and losing an item to a misread network error is
 * worse than retrying a bug, so only these are permanent.
 */
const BUG_TYPE_ERROR =
  /is not a function|is not iterable|is not a constructor|Cannot read propert|Cannot set propert|Cannot destructure|Cannot convert|Cannot create property|Cannot assign to read only|Assignment to constant|Cannot mix BigInt/;

function httpStatusOf(error: Error): number | undefined {
  const status = (error as { status?: unknown }).status;
  return typeof status === "number" && status >= 100 && status <= 599 ? status : undefined;
}

/**
 * Which class an error thrown while rolling out an item belongs to. Recognises errors by name and
 * `status` as well as by class, so envs bundled with their own copy of this package still work.
 */
export function classifyRolloutError(error: unknown): RolloutErrorClass {
  // Throwing a non-Error is a bug: nothing about it suggests a later attempt would differ.
  if (!(error instanceof Error)) return "permanent";
  if (error instanceof DropGroupError || error.name === "DropGroupError") return "drop";
  if (BUG_NAMES.has(error.name)) return "permanent";
  const status = httpStatusOf(error);
  if (status !== undefined) {
    if (status >= 500 || status === 408 || status === 429) return "retryable";
    return status >= 400 ? "permanent" : "retryable";
  }
  if (error.name === "TypeError" && BUG_TYPE_ERROR.test(error.message)) return "permanent";
  return "retryable";
}

/** Reason labels without numbers, so counts aggregate ("group has 3 sequences…" → one key). */
export function reasonKey(reason: string): string {
  return reason.replace(/-?\d+(\.\d+)?/g, "N");
}

/** Adds one drop to per-reason counts (the one counting rule of every runtime). */
export function countDrop(counts: Record<string, number>, reason: string): void {
  const key = reasonKey(reason);
  counts[key] = (counts[key] ?? 0) + 1;
}

/** A valid group with its position among the item's groups (keys idempotent submissions). */
export interface IndexedGroup {
  group: ScoredDataGroup;
  index: number;
}

export interface RolloutItemOptions<S> {
  validation: SendValidationOptions;
  /** Receives the item's valid groups (at least one); throws to fail the item. */
  submit: (groups: IndexedGroup[]) => Promise<S>;
  /**
   * Call env.recordScores (default true). False where the curriculum lives elsewhere (the
   * Worker's feeder records the result's `scores` on its own instance).
   */
  recordScores?: boolean;
  /** Time limit for collectTrajectories in seconds; ≤0 or absent: none. */
  collectTimeoutSeconds?: number;
  /** Checked after each env step: true discards the work (its item is re-run elsewhere). */
  cancelled?: () => boolean;
}

interface Collected<Item> {
  /** Scores of every group the env returned, dropped ones included (curriculum feedback). */
  scores: number[];
  /** Items collectTrajectories asked to run next. */
  backlog: Item[];
  /** Reasons of groups dropped by send-side validation (or the one reason of an env drop). */
  drops: string[];
}

export type RolloutItemResult<Item, S> =
  | ({ kind: "submitted"; submitted: S; groups: number } & Collected<Item>)
  | ({
      kind: "dropped";
      reason: string;
      /** "env": DropGroupError or no group; "validation": every group failed a send-side rule. */
      by: "env" | "validation";
    } & Collected<Item>)
  | { kind: "retryable" | "permanent"; error: unknown; message: string; backlog: Item[] }
  | { kind: "cancelled" };

/** The result for an error thrown around a rollout (`as` overrides the classification). */
export function rolloutFailure<Item, S>(
  error: unknown,
  backlog: Item[] = [],
  as?: "retryable" | "permanent",
): RolloutItemResult<Item, S> {
  const message = errorMessage(error);
  const kind = as ?? classifyRolloutError(error);
  if (kind === "drop")
    return { kind: "dropped", reason: message, by: "env", drops: [message], scores: [], backlog };
  return { kind, error, message, backlog };
}

async function withTimeout<T>(promise: Promise<T>, seconds: number | undefined, what: string) {
  if (!seconds || seconds <= 0) return promise;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new RolloutTimeoutError(`${what} exceeded worker_timeout (${seconds} s)`)),
      seconds * 1000,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export async function runRolloutItem<Item extends JsonValue, Config extends BaseEnvConfig, S>(
  env: BaseEnv<Item, Config>,
  item: Item,
  options: RolloutItemOptions<S>,
): Promise<RolloutItemResult<Item, S>> {
  const cancelled = options.cancelled ?? (() => false);
  let backlog: Item[] = [];
  try {
    const [collected, more] = await withTimeout(
      env.collectTrajectories(item),
      options.collectTimeoutSeconds,
      `collectTrajectories(${env.name})`,
    );
    if (cancelled()) return { kind: "cancelled" };
    backlog = more;
    const groups = groupsOf(await env.postprocessHistories(collected));
    if (cancelled()) return { kind: "cancelled" };
    if (groups.length === 0) {
      const reason = "no group returned";
      return { kind: "dropped", reason, by: "env", drops: [reason], scores: [], backlog };
    }
    // Before validation: an all-correct group with identical scores is exactly the signal a
    // curriculum needs to advance.
    const scores = groups.flatMap((g) => (Array.isArray(g.scores) ? g.scores : []));
    if (options.recordScores ?? true) env.recordScores(item, scores);
    const valid: IndexedGroup[] = [];
    const drops: string[] = [];
    for (const [index, group] of groups.entries()) {
      const checked = validateGroupForSend(group, options.validation);
      if (checked.ok) valid.push({ group: checked.group, index });
      else if (checked.permanent) throw new InvalidGroupError(checked.reason);
      else drops.push(checked.reason);
    }
    if (valid.length === 0) {
      return { kind: "dropped", reason: drops[0]!, by: "validation", drops, scores, backlog };
    }
    const submitted = await options.submit(valid);
    return { kind: "submitted", submitted, groups: valid.length, drops, scores, backlog };
  } catch (error) {
    return rolloutFailure(error, backlog);
  } finally {
    // Per-group resources are released whatever happened; a failing cleanup changes nothing.
    await env.cleanup().catch(() => {});
  }
}
