/**
 * What the API asks of an env worker's feeder object. The platform layer's EnvFeeder Durable
 * Object implements it; the API names only this port, so it never depends on the platform.
 */
import type { EnvWorkerRef } from "../core/wire/server-config";

/** An env worker as its feeder describes it (RPC-serialisable; GET /v1/runs/{run}/env-workers/…). */
export interface FeederSummary {
  run: string;
  name: string;
  env: string;
  env_id: number | null;
  status: "waiting_for_trainer" | "running" | "paused" | "stopped";
  in_flight: number;
  issued: number;
  succeeded: number;
  failed: number;
  dropped: number;
  /** Groups dropped by send-side validation (identical scores, wrong size, too long). */
  rejected: number;
  /** Dropped items and rejected groups by reason. */
  drop_reasons: Record<string, number>;
  last_error: string | null;
  eval_running: boolean;
  evaluations: number;
  /** Set while the feeder issues at most 1 item/s because every recent group was dropped. */
  backing_off: BackingOff | null;
}

export interface BackingOff {
  /** e.g. "all scores identical (0) in the last 200 groups: your reward gives …" */
  message: string;
  /** When the message was (re)issued, ms since the epoch: a new value is a new report. */
  reported_at: number;
}

/** What a queue consumer (or the dead-letter consumer) reports for one item. */
export interface ItemReport {
  /** false: the item failed (a permanent error, or retries exhausted). */
  ok: boolean;
  /** The env dropped the item on purpose (DropGroupError) or returned no group: its reason. */
  dropped?: string;
  /** Reasons of the item's groups that failed send-side validation. */
  rejected?: string[];
  scores?: number[];
  /** Groups of the item that were submitted; any resets the drop back-off. */
  submitted?: number;
  /** Values the env observed (observe()) while rolling the item out, by name. */
  observations?: Record<string, number[]>;
  /** JSON of the backlog items it asked for, `{ itemId, item }[]` (a string: RPC stays flat). */
  backlogJson?: string;
}

/** The feeder's RPC methods: the API starts, stops, describes and clears; the queue path reports. */
export interface EnvFeederPort extends Rpc.DurableObjectBranded {
  start(run: string, name: string, spec: EnvWorkerRef): Promise<FeederSummary>;
  stop(): Promise<FeederSummary | null>;
  describe(): Promise<FeederSummary | null>;
  /** Forget everything (the run is being reset). */
  clear(): Promise<void>;
  /** Counts one item's outcome once; false when the item was already counted or is unknown. */
  report(itemId: string, outcome: ItemReport): Promise<boolean>;
}
