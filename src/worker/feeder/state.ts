/**
 * The EnvFeeder's state model: what it persists, and every change to it as a synchronous function
 * of (state, input, now). The Durable Object (../env-feeder.ts) awaits I/O (D1, the RunCoordinator,
 * the env, queue sends) between these calls and persists the result; nothing here awaits, reads a
 * binding or the clock, so it is unit-tested in Node.
 */
import type { BackingOff, FeederSummary, ItemReport } from "../../api/env-feeder-port";
import type { EnvWorkerRef } from "../../core/wire/server-config";
import type { JsonObject, JsonValue } from "../../env-sdk/base-env";
import { DropBackoff, type DropBackoffState } from "../../env-sdk/runtime/drop-backoff";
import { addObservations, countReason, type FeederMetricsState } from "./metrics";

export interface InFlight {
  item: JsonValue;
  issuedAt: number;
}

/** A backlog item a rollout asked for, with the id derived from its parent's. */
export interface BacklogItem {
  itemId: string;
  item: JsonValue;
}

export interface FeederState extends FeederMetricsState {
  run: string;
  name: string;
  /** Never holds an API key (src/worker/spec-inference.ts resolves the servers when used). */
  spec: EnvWorkerRef;
  envId: number | null;
  status: FeederSummary["status"];
  inFlight: Record<string, InFlight>;
  issued: number;
  succeeded: number;
  failed: number;
  /** Items dropped: by the env (DropGroupError, no group), past worker_timeout, or too large. */
  dropped: number;
  /** Groups dropped by send-side validation (identical scores, wrong size, too long). */
  rejected: number;
  checkpoint: JsonObject | null;
  lastError: string | null;
  /** Run step seen on the previous tick (evaluation triggers on crossing steps_per_eval). */
  lastStep?: number | null;
  evaluations?: number;
  /** Consecutive drops and rate limit (states saved before the back-off existed have none). */
  backoff?: DropBackoffState;
  /** While backing off: why, as last reported (every 10 s of continued drops). */
  backingOff?: BackingOff | null;
  /** Items taken from the env whose queue send failed: sent first on a later tick. */
  unsent?: BacklogItem[];
  /** Consecutive failed queue sends, and ticks left to wait before the next try. */
  sendFailures?: number;
  sendWaitTicks?: number;
}

/** The state of a feeder (re)started with `spec`, keeping what a previous start left. */
export function startedState(
  run: string,
  name: string,
  spec: EnvWorkerRef,
  previous: FeederState | null,
): FeederState {
  const sameEnv = previous?.spec.envName === spec.envName;
  return {
    run,
    name,
    spec,
    envId: sameEnv ? previous.envId : null,
    status: "waiting_for_trainer",
    inFlight: previous?.inFlight ?? {},
    issued: previous?.issued ?? 0,
    succeeded: previous?.succeeded ?? 0,
    failed: previous?.failed ?? 0,
    dropped: previous?.dropped ?? 0,
    rejected: previous?.rejected ?? 0,
    dropReasons: previous?.dropReasons ?? {},
    backoff: previous?.backoff,
    backingOff: previous?.backingOff ?? null,
    checkpoint: sameEnv ? previous.checkpoint : null,
    lastError: null,
    unsent: sameEnv ? previous.unsent : undefined,
  };
}

export function summarize(state: FeederState, evalRunning: boolean): FeederSummary {
  return {
    run: state.run,
    name: state.name,
    env: state.spec.envName,
    env_id: state.envId,
    status: state.status,
    in_flight: Object.keys(state.inFlight).length,
    issued: state.issued,
    succeeded: state.succeeded,
    failed: state.failed,
    dropped: state.dropped,
    rejected: state.rejected,
    drop_reasons: { ...(state.dropReasons ?? {}) },
    last_error: state.lastError,
    eval_running: evalRunning,
    evaluations: state.evaluations ?? 0,
    backing_off: state.backingOff ?? null,
  };
}

/**
 * Runs `use` on the feeder's drop back-off (the Node runtime's rule: after 200 consecutive drops,
 * at most 1 item/s and the reason every 10 s), kept in the persisted state so that it survives
 * the object being evicted between ticks.
 */
export function withBackoff<T>(
  state: FeederState,
  now: number,
  use: (backoff: DropBackoff) => T,
): T {
  const backoff = new DropBackoff({ state: state.backoff, now: () => now });
  const result = use(backoff);
  state.backoff = backoff.snapshot();
  if (!backoff.active) state.backingOff = null;
  return result;
}

/** A dropped item or rejected group, as the back-off counts it. */
function backoffDrop(state: FeederState, reason: string, now: number): void {
  withBackoff(state, now, (backoff) => {
    const message = backoff.dropped(reason);
    if (message) state.backingOff = { message, reported_at: now };
  });
}

/** An item dropped (by the env, past worker_timeout, too large). */
export function dropItem(state: FeederState, reason: string, now: number): void {
  state.dropped++;
  countReason(state, reason);
  backoffDrop(state, reason, now);
}

/** The run was reset or the env forgotten: register again, with nothing in flight. */
export function forgetRegistration(state: FeederState): void {
  state.envId = null;
  state.inFlight = {};
  state.unsent = undefined;
}

/**
 * Drops the items in flight longer than twice `workerTimeoutSeconds` (Atropos drops an item whose
 * worker ran past worker_timeout; the grace period covers queue delivery delay and retries).
 */
export function expireInFlight(
  state: FeederState,
  workerTimeoutSeconds: number,
  now: number,
): void {
  if (workerTimeoutSeconds <= 0) return;
  for (const [id, f] of Object.entries(state.inFlight)) {
    if (now - f.issuedAt > workerTimeoutSeconds * 1000 * 2) {
      delete state.inFlight[id];
      dropItem(state, "worker timeout", now);
    }
  }
}

/**
 * Whether this tick may send to the queue: after failed sends it waits 0, 1, 3, 7 … (at most 63)
 * ticks before trying again.
 */
export function maySend(state: FeederState): boolean {
  if ((state.sendWaitTicks ?? 0) <= 0) return true;
  state.sendWaitTicks = (state.sendWaitTicks ?? 0) - 1;
  return false;
}

/** Up to `count` items whose send failed earlier, taken to be sent again. */
export function takeUnsent(state: FeederState, count: number): BacklogItem[] {
  const unsent = state.unsent ?? [];
  const taken = unsent.slice(0, Math.max(0, count));
  state.unsent = unsent.length > taken.length ? unsent.slice(taken.length) : undefined;
  return taken;
}

/** An item about to be sent: it holds a slot until its outcome is reported. */
export function issue(state: FeederState, itemId: string, item: JsonValue, now: number): void {
  state.inFlight[itemId] = { item, issuedAt: now };
}

/** Items that reached the queue. */
export function sent(state: FeederState, count: number): void {
  state.issued += count;
  state.sendFailures = 0;
  state.sendWaitTicks = 0;
}

/**
 * Items whose queue send failed: their slots are free at once, and they are kept to be sent first
 * (with the same ids, so a send that did arrive dedupes) after a back-off.
 */
export function sendFailed(state: FeederState, items: BacklogItem[], error: string): void {
  for (const { itemId } of items) delete state.inFlight[itemId];
  state.unsent = [...items, ...(state.unsent ?? [])];
  state.sendFailures = (state.sendFailures ?? 0) + 1;
  state.sendWaitTicks = Math.min(63, 2 ** (state.sendFailures - 1) - 1);
  state.lastError = `sending ${items.length} item(s) to the queue failed (sent again later): ${error}`;
}

/** What `applyReport` found: the reported item's entry, for the curriculum. */
export interface Reported {
  entry: InFlight;
  /** Whether the env should get the item's scores (recordScores). */
  scored: boolean;
}

/**
 * Applies one item's outcome. Returns null when the item was not in flight: a redelivered message
 * reports again (already counted), or the item was dropped past worker_timeout (counted).
 */
export function applyReport(
  state: FeederState,
  itemId: string,
  outcome: ItemReport,
  now: number,
): Reported | null {
  const entry = state.inFlight[itemId];
  if (!entry) return null;
  delete state.inFlight[itemId];
  const backlog = JSON.parse(outcome.backlogJson ?? "[]") as BacklogItem[];
  for (const b of backlog) issue(state, b.itemId, b.item, now);
  // Reports from consumers older than `submitted`: an ok item without drops kept its group.
  const kept =
    outcome.submitted ??
    (outcome.ok && outcome.dropped === undefined && !outcome.rejected?.length ? 1 : 0);
  if (kept > 0) withBackoff(state, now, (backoff) => backoff.kept());
  if (!outcome.ok) state.failed++;
  else if (outcome.dropped !== undefined) dropItem(state, outcome.dropped, now);
  else state.succeeded++;
  for (const reason of outcome.rejected ?? []) {
    state.rejected++;
    countReason(state, reason);
    backoffDrop(state, reason, now);
  }
  if (outcome.observations) addObservations(state, outcome.observations);
  return { entry, scored: outcome.ok && (outcome.scores?.length ?? 0) > 0 };
}
