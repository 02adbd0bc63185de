/**
 * `start`'s env runners in Node: each env served by serveEnv against the local API, its events
 * counted for the progress view, the failure account and the learning curve.
 */
import type { EnvDefinition } from "../env-sdk/define-env";
import { RolloutApiClient } from "../env-sdk/runtime/api-client";
import { nodeGetWithBody } from "../env-sdk/runtime/node-get-with-body";
import { type ServeSummary, serveEnv } from "../env-sdk/runtime/serve";
import type { FailureAccount } from "./failure-account";
import { createEnv, type InferenceHandle } from "./inference";
import type { LearningRecorder } from "./learning-summary";

export interface EnvRun {
  name: string;
  envId: number | null;
  promise: Promise<ServeSummary | Error>;
  dropped: number;
  errors: string[];
  /** Items that failed with an error (the env's code or an unreachable server). */
  failed: number;
  /** Permanent failures since the last item that produced or dropped a group. */
  permanentInARow: number;
  /** Set when serveEnv returned or failed. */
  finished: ServeSummary | Error | null;
}

/**
 * Permanent failures in a row (bugs in the env's code: no group, no drop in between) after which
 * start stops instead of failing every item for as long as it runs.
 */
export const MAX_PERMANENT_FAILURES_IN_A_ROW = 20;

/** Why an env must stop `start`, or null: the same bug failing item after item. */
export function permanentFailureStop(run: {
  name: string;
  permanentInARow: number;
  errors: string[];
}): string | null {
  if (run.permanentInARow < MAX_PERMANENT_FAILURES_IN_A_ROW) return null;
  return `${run.name}: ${run.permanentInARow} items in a row failed with an error in the env's code (last: ${run.errors.at(-1) ?? "unknown"}); fix the env and start again (docs/WRITING_ENVS.md lists how errors are classed)`;
}

/** Why the Node env runners cannot go on (one env broken, or every env ended), or null. */
export function nodeEnvsFailure(runs: EnvRun[]): string | null {
  const broken = runs.map(permanentFailureStop).find((m) => m !== null);
  if (broken) return broken;
  if (runs.every((r) => r.finished instanceof Error)) {
    return `every env failed: ${runs.map((r) => `${r.name}: ${(r.finished as Error).message}`).join("; ")}`;
  }
  return null;
}

export interface NodeEnvSetup {
  def: EnvDefinition;
  config: Record<string, unknown>;
  apiUrl: string;
  maxTokenLen: number;
  inference: InferenceHandle;
  tokenizer: string;
  signal: AbortSignal;
  failures: FailureAccount;
  learning: LearningRecorder;
  /** Where the env's back-off reasons are printed. */
  write(line: string): void;
}

/** Starts one env in Node (serveEnv); the returned run fills in as it goes. */
export async function startNodeEnv(setup: NodeEnvSetup): Promise<EnvRun> {
  const { def, failures, learning } = setup;
  const name = def.name;
  const env = await createEnv(
    def,
    {
      // The local loop's dashboard shows rollouts as text (the env config may turn it off).
      include_token_texts: true,
      ...setup.config,
      total_steps: -1,
      rollout_server_url: setup.apiUrl,
      max_token_length: setup.maxTokenLen,
    },
    setup.inference,
    setup.tokenizer,
    { onGroups: (scores) => learning.groups(name, scores) },
  );
  const api = new RolloutApiClient({ url: setup.apiUrl, getWithBody: nodeGetWithBody });
  const run: EnvRun = {
    name,
    envId: null,
    promise: Promise.resolve(new Error("unset")),
    dropped: 0,
    errors: [],
    failed: 0,
    permanentInARow: 0,
    finished: null,
  };
  run.promise = serveEnv(env, api, {
    signal: setup.signal,
    pollIntervalMs: 150,
    registerPollMs: 250,
    onEvent: (e) => {
      if (e.type === "registered") run.envId = e.envId;
      if (e.type === "dropped") {
        run.dropped++;
        learning.dropped(name);
      }
      if (e.type === "submitted" || e.type === "dropped") run.permanentInARow = 0;
      if (e.type === "item" && e.outcome === "ran") failures.ran(name);
      if (e.type === "worker_error" && e.errorClass !== undefined) {
        failures.failed(name, e.message, e.error);
        run.failed++;
        if (e.errorClass === "permanent") run.permanentInARow++;
      }
      if (e.type === "worker_error") {
        run.errors.push(e.message);
        if (run.errors.length > 5) run.errors.shift();
      }
      if (e.type === "backing_off") setup.write(`\n${name}: ${e.message}\n`);
    },
  })
    .catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))))
    .then((result) => {
      run.finished = result;
      return result;
    });
  return run;
}
