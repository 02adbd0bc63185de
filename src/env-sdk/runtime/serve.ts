/**
 * `serveEnv`: the Node equivalent of Atropos' `env_manager`. Registers with the rollout API, loads
 * a checkpoint, reads /info, then hands over to the serve loop (serve-loop.ts), which every poll
 * reads /status-env, runs step checks (eval / checkpoint crossings), and keeps the number of
 * running slots at the scheduler's target; each finished group is fed back to the curriculum,
 * validated and submitted (idempotently). Checkpoints: src/env-sdk/runtime/checkpoints.ts.
 *
 * Differences from the original: bounded (AbortSignal, `maxLoops`), transient /status-env failures
 * do not kill the env (they are retried next poll, `maxConsecutiveErrors` bounds it), eval/checkpoint
 * crossings of several multiples are detected, backlog is FIFO. A cancelled worker cannot be
 * interrupted mid-request (envs get no signal); its result is discarded and its item re-queued.
 */

import { abortableSleep } from "../../core/concurrency/abortable-sleep";
import type { BaseEnv, JsonValue } from "../base-env";
import type { BaseEnvConfig } from "../config";
import type { RolloutApiClient } from "./api-client";
import { checkpointsFor } from "./checkpoints";
import { resolveMaxNumWorkers } from "./scheduler";
import { ServeLoop } from "./serve-loop";
import type { ServeOptions, ServeSummary } from "./serve-types";

export type { ServeEvent, ServeOptions, ServeSummary } from "./serve-types";

export async function serveEnv<Item extends JsonValue, Config extends BaseEnvConfig>(
  env: BaseEnv<Item, Config>,
  api: RolloutApiClient,
  options: ServeOptions = {},
): Promise<ServeSummary> {
  const { config } = env;
  const signal = options.signal;
  const emit = options.onEvent ?? (() => {});
  await env.setup();

  const registration = await api.registerEnv(
    {
      max_token_length: config.max_token_length,
      desired_name: config.wandb_name ?? env.name,
      weight: config.inference_weight,
      group_size: config.group_size,
      min_batch_allocation: config.min_batch_allocation,
    },
    { pollMs: options.registerPollMs, signal, onWait: () => emit({ type: "waiting_for_trainer" }) },
  );
  const envId = registration.env_id;
  const totalSteps = config.total_steps === -1 ? registration.num_steps : config.total_steps;
  if (totalSteps === -1) throw new Error("total_steps is -1 and the API reported num_steps -1");
  emit({
    type: "registered",
    envId,
    name: registration.wandb_name,
    startingStep: registration.starting_step,
    totalSteps,
  });
  const currStep = registration.starting_step;
  const checkpoints = checkpointsFor(options.checkpointStore, api, envId, signal, (message) =>
    emit({ type: "checkpoint_error", message }),
  );
  const saved = currStep > 0 ? await checkpoints?.load(currStep) : null;
  if (saved) {
    env.loadCheckpoint(saved);
    emit({ type: "checkpoint_loaded", step: currStep });
  }

  const info = await api.info(signal);
  const batchSize = info.batch_size !== -1 ? info.batch_size : config.batch_size;
  const maxTokenLen = info.max_token_len !== -1 ? info.max_token_len : config.max_token_length;
  if (batchSize === -1 || config.group_size > batchSize) {
    throw new Error(`group_size ${config.group_size} does not fit batch_size ${batchSize}`);
  }
  if (options.startupDelayMs) await abortableSleep(options.startupDelayMs, signal);

  const loop = new ServeLoop(
    env,
    api,
    {
      envId,
      startingStep: currStep,
      totalSteps,
      batchSize,
      maxTokenLen,
      maxSlots: resolveMaxNumWorkers(config, options.numServers ?? 1),
      checkpointInterval: registration.checkpoint_interval,
      checkpoints,
    },
    options,
  );
  return loop.run();
}
