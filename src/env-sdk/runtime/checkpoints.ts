/**
 * Where serveEnv keeps an env's checkpoints (its `saveCheckpoint()` state: iterator, curriculum),
 * saved every `checkpoint_interval` trainer steps and read back when the env registers again.
 */
import { errorMessage } from "../../core/errors";
import type { JsonObject } from "../base-env";
import type { RolloutApiClient } from "./api-client";

export interface CheckpointStore {
  load(step: number): Promise<JsonObject | null>;
  save(step: number, state: JsonObject): Promise<void>;
}

/** The rollout API's checkpoint store (PUT/GET /v1/runs/{run}/envs/{envId}/checkpoints/{step}). */
export function apiCheckpointStore(
  api: RolloutApiClient,
  envId: number,
  signal?: AbortSignal,
): CheckpointStore {
  return {
    load: async (step) => (await api.loadCheckpoint(envId, step, signal))?.state ?? null,
    save: (step, state) => api.saveCheckpoint(envId, step, state, signal),
  };
}

/**
 * The store serveEnv uses (none, one given, or the API's under the env's id), with failures
 * reported through `onError` instead of thrown: a checkpoint that cannot be read or written
 * must not stop the env. `save` resolves true once saved.
 */
export function checkpointsFor(
  option: CheckpointStore | "api" | undefined,
  api: RolloutApiClient,
  envId: number,
  signal: AbortSignal | undefined,
  onError: (message: string) => void,
): {
  load(step: number): Promise<JsonObject | null>;
  save(step: number, state: JsonObject): Promise<boolean>;
} | null {
  const store = option === "api" ? apiCheckpointStore(api, envId, signal) : option;
  if (!store) return null;
  const report = (err: unknown) => onError(errorMessage(err));
  return {
    load: (step) =>
      store.load(step).catch((err: unknown) => {
        report(err);
        return null;
      }),
    save: (step, state) =>
      store.save(step, state).then(
        () => true,
        (err: unknown) => {
          report(err);
          return false;
        },
      ),
  };
}
