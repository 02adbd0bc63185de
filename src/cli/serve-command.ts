/** `atropos-edge serve`: one env from Node against a (remote) rollout API — Atropos' `env.py serve`. */
import { appendFileSync, existsSync, mkdirSync } from "node:fs";
import { dirname, extname } from "node:path";
import type { ScoredDataGroup } from "../core/wire/group-types";
import { RolloutApiClient } from "../env-sdk/runtime/api-client";
import { nodeGetWithBody } from "../env-sdk/runtime/node-get-with-body";
import { groupToJsonl } from "../env-sdk/runtime/process";
import { type ServeSummary, serveEnv } from "../env-sdk/runtime/serve";
import { type EnvRef, envDefinitionOf } from "./env-loader";
import { createEnv, type InferenceFlags, openInference } from "./inference";

export interface ServeCommandOptions extends InferenceFlags {
  env: EnvRef;
  /** `env.*` fields from the config file and `--env.*` flags. */
  envConfig?: Record<string, unknown>;
  api: string;
  run: string;
  token?: string;
  groupSize?: number;
  maxNumWorkers?: number;
}

/** `path`, or the first free `stem_1.ext`, `stem_2.ext`… when it exists (never overwrite). */
export function freshPath(path: string): string {
  const ext = extname(path);
  const stem = path.slice(0, path.length - ext.length);
  let candidate = path;
  for (let i = 1; existsSync(candidate); i++) candidate = `${stem}_${i}${ext}`;
  return candidate;
}

/** Appends every group it submits (valid ones: serveEnv validates first) to a JSONL file. */
class GroupSavingApiClient extends RolloutApiClient {
  constructor(
    options: ConstructorParameters<typeof RolloutApiClient>[0],
    private readonly file: string,
  ) {
    super(options);
    mkdirSync(dirname(file), { recursive: true });
  }

  override submitGroups(
    groups: ScoredDataGroup | ScoredDataGroup[],
    ...rest: Parameters<RolloutApiClient["submitGroups"]> extends [unknown, ...infer R] ? R : never
  ) {
    const list = Array.isArray(groups) ? groups : [groups];
    appendFileSync(this.file, list.map(groupToJsonl).join(""));
    return super.submitGroups(groups, ...rest);
  }
}

export async function runServe(options: ServeCommandOptions, log = console.log): Promise<number> {
  const definition = await envDefinitionOf(options.env);
  const inference = await openInference(options);
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    const config: Record<string, unknown> = {
      ...options.envConfig,
      rollout_server_url: options.api,
      run: options.run,
    };
    if (options.groupSize) config.group_size = options.groupSize;
    if (options.maxNumWorkers) config.max_num_workers = options.maxNumWorkers;
    const env = await createEnv(definition, config, inference, options.tokenizer);
    const apiOptions = {
      url: env.config.rollout_server_url,
      run: env.config.run,
      token: options.token,
      getWithBody: nodeGetWithBody,
    };
    const savePath = env.config.data_path_to_save_groups;
    const saveTo = savePath ? freshPath(savePath) : null;
    const api = saveTo
      ? new GroupSavingApiClient(apiOptions, saveTo)
      : new RolloutApiClient(apiOptions);
    log(
      `serving ${env.name} → ${options.api} (run ${options.run}); ${inference.describe}${saveTo ? `; groups also to ${saveTo}` : ""}`,
    );
    log(stopsWhen(env.config.total_steps));
    let submitted = 0;
    // The API is polled every second while no trainer is registered: say so once, then every 30 s.
    let waitingSince: number | null = null;
    let lastWaitLog = 0;
    const summary = await serveEnvExplained(env, api, options.api, {
      signal: abort.signal,
      // The env's state (iterator, curriculum) survives a restart of serve.
      checkpointStore: "api",
      onEvent: (e) => {
        if (e.type === "checkpoint") log(`checkpoint saved at step ${e.step}`);
        if (e.type === "checkpoint_loaded")
          log(`resumed the env's state from its checkpoint at or before step ${e.step}`);
        if (e.type === "checkpoint_error") log(`checkpoint: ${e.message}`);
        if (e.type === "registered") {
          log(
            `registered as env_id ${e.envId} (${e.name}); stops once the trainer's step plus the batches queued pass ${e.totalSteps}${e.startingStep > 0 ? ` (trainer at step ${e.startingStep})` : ""}`,
          );
        }
        if (e.type !== "waiting_for_trainer") waitingSince = null;
        else {
          const now = Date.now();
          if (waitingSince === null) {
            waitingSince = lastWaitLog = now;
            log("waiting for a trainer to /register…");
          } else if (now - lastWaitLog >= 30_000) {
            lastWaitLog = now;
            log(
              `still waiting for a trainer to /register (${Math.round((now - waitingSince) / 1000)} s)…`,
            );
          }
        }
        if (e.type === "step") log(`trainer step ${e.step} (${submitted} groups submitted)`);
        if (e.type === "submitted" && e.ok) submitted += e.groups;
        if (e.type === "worker_error") log(`worker error: ${e.message}`);
        if (e.type === "backing_off") log(e.message);
      },
    });
    if (!summary) {
      log("stopped before a trainer registered");
      return 0;
    }
    log(serveSummaryLine(summary));
    return 0;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    await inference.close();
  }
}

/** When serve will stop, said before it starts: total_steps decides, not the trainer's steps. */
export function stopsWhen(totalSteps: number): string {
  return totalSteps === -1
    ? "stops once the trainer's step plus the batches queued pass the num_steps it registered with (env.total_steps -1), or on Ctrl-C"
    : `stops once the trainer's step plus the batches queued pass total_steps ${totalSteps} (env.total_steps; set --env.total_steps N, or -1 for the trainer's num_steps), or on Ctrl-C`;
}

const EXIT_REASONS: Record<ServeSummary["exitReason"], string> = {
  terminated: "the trainer's step plus the batches queued passed total_steps",
  aborted: "stopped by signal",
  exhausted: "the env ran out of items",
  max_loops: "loop limit reached",
};

/** The last line of serve: why it stopped, and what became of the groups (drops by reason). */
export function serveSummaryLine(summary: ServeSummary): string {
  const reasons = Object.entries(summary.dropReasons)
    .sort((a, b) => b[1] - a[1])
    .map(([reason, count]) => `${count}× ${reason}`);
  const parts = [
    `${summary.groupsSubmitted} groups submitted`,
    `${summary.groupsDropped} dropped${reasons.length ? ` (${reasons.join("; ")})` : ""}`,
  ];
  if (summary.workerErrors > 0) parts.push(`${summary.workerErrors} items failed with an error`);
  if (summary.submitFailures > 0) parts.push(`${summary.submitFailures} submissions refused`);
  return `stopped at trainer step ${summary.finalStep} (${EXIT_REASONS[summary.exitReason]}): ${parts.join(", ")}`;
}

/**
 * serveEnv with the two ends a user meets most often made plain: Ctrl-C while waiting for a
 * trainer is a clean stop (null), and an API that cannot be reached says so and what to check.
 */
async function serveEnvExplained(
  env: Parameters<typeof serveEnv>[0],
  api: Parameters<typeof serveEnv>[1],
  url: string,
  options: Parameters<typeof serveEnv>[2],
): Promise<Awaited<ReturnType<typeof serveEnv>> | null> {
  try {
    return await serveEnv(env, api, options);
  } catch (error) {
    if (options?.signal?.aborted) return null;
    if (error instanceof TypeError && error.message === "fetch failed") {
      const code = (error.cause as { code?: string } | undefined)?.code ?? "network error";
      throw new Error(
        `cannot reach the rollout API at ${url} (${code}): is it running (npm run dev)? check --api`,
      );
    }
    throw error;
  }
}
