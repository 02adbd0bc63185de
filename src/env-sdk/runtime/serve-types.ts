/** The shapes `serveEnv` takes and reports: its options, its events and its summary. */
import type { EvalResult } from "../base-env";
import type { CheckpointStore } from "./checkpoints";

export type ServeEvent =
  /** totalSteps: the trainer step at which the loop stops (total_steps, or the trainer's num_steps). */
  | {
      type: "registered";
      envId: number;
      name: string;
      startingStep: number;
      totalSteps: number;
    }
  | { type: "waiting_for_trainer" }
  | { type: "step"; step: number }
  | { type: "paused" }
  | { type: "submitted"; groups: number; status: number; ok: boolean }
  | { type: "dropped"; reason: string }
  | { type: "backing_off"; message: string }
  /** errorClass: absent for evaluation failures; error: what was thrown (its stack locates it). */
  | {
      type: "worker_error";
      message: string;
      errorClass?: "retryable" | "permanent";
      error?: unknown;
    }
  /** One item finished: its groups went out or were dropped ("ran"), or it failed with an error. */
  | { type: "item"; outcome: "ran" | "failed" }
  | { type: "status_error"; message: string }
  | { type: "eval"; step: number; result: EvalResult }
  /** Values of a finished step (env: observe()/metrics() and drops by reason) or an evaluation. */
  | { type: "metrics"; step: number; kind: "env" | "eval"; metrics: Record<string, number> }
  /** The API refused or failed a metrics report (the loop goes on; 404/405: reporting stops). */
  | { type: "metrics_error"; message: string }
  | { type: "checkpoint" | "checkpoint_loaded"; step: number } // loaded: state at or before step
  | { type: "checkpoint_error"; message: string };

export interface ServeOptions {
  signal?: AbortSignal;
  pollIntervalMs?: number;
  registerPollMs?: number;
  /** Atropos waits 5 s after /info; default 0. */
  startupDelayMs?: number;
  /** Inference servers behind the env (for max_num_workers = -1). */
  numServers?: number;
  /** Stop the loop after this many polls (tests, smoke runs). */
  maxLoops?: number;
  /** Stop when getNextItem() returned null and nothing is in flight (default false: keep polling). */
  stopWhenExhausted?: boolean;
  /** Consecutive /status-env failures tolerated before giving up (default 30). */
  maxConsecutiveErrors?: number;
  /** Saves the env's state every checkpoint_interval steps, reads it back on a later start ("api": the rollout API's store). */
  checkpointStore?: CheckpointStore | "api";
  /** Disconnect from the API on exit (default true). */
  disconnectOnExit?: boolean;
  onEvent?: (event: ServeEvent) => void;
  now?: () => number;
}

export interface ServeSummary {
  envId: number;
  exitReason: "terminated" | "aborted" | "exhausted" | "max_loops";
  finalStep: number;
  groupsSubmitted: number;
  groupsDropped: number;
  submitFailures: number;
  workerErrors: number;
  dropReasons: Record<string, number>;
  evaluations: { step: number; metrics: Record<string, number> }[];
}
