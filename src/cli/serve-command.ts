/** `atropos-edge serve`: one env from Node against a (remote) rollout API — Atropos' `env.py serve`. */
import { RolloutApiClient } from "../env-workers/runtime/api-client";
import { nodeGetWithBody } from "../env-workers/runtime/node-get-with-body";
import { serveEnv } from "../env-workers/runtime/serve";
import { createEnv, type InferenceFlags, openInference } from "./inference";

export interface ServeCommandOptions extends InferenceFlags {
  env: string;
  api: string;
  run: string;
  token?: string;
  groupSize?: number;
  maxNumWorkers?: number;
}

export async function runServe(options: ServeCommandOptions, log = console.log): Promise<number> {
  const inference = await openInference(options);
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    const config: Record<string, unknown> = { rollout_server_url: options.api, run: options.run };
    if (options.groupSize) config.group_size = options.groupSize;
    if (options.maxNumWorkers) config.max_num_workers = options.maxNumWorkers;
    const env = await createEnv(options.env, config, inference, options.tokenizer);
    const api = new RolloutApiClient({
      url: options.api,
      run: options.run,
      token: options.token,
      getWithBody: nodeGetWithBody,
    });
    log(`serving ${options.env} → ${options.api} (run ${options.run}); ${inference.describe}`);
    let submitted = 0;
    // The API is polled every second while no trainer is registered: say so once, then every 30 s.
    let waitingSince: number | null = null;
    let lastWaitLog = 0;
    const summary = await serveEnvExplained(env, api, options.api, {
      signal: abort.signal,
      onEvent: (e) => {
        if (e.type === "registered") log(`registered as env_id ${e.envId} (${e.name})`);
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
    log(
      `stopped (${summary.exitReason}) at step ${summary.finalStep}: ${summary.groupsSubmitted} submitted, ${summary.groupsDropped} dropped`,
    );
    return 0;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    await inference.close();
  }
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
