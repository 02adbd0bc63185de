/**
 * An env worker's servers where they are used (feeder, queue consumer): listed ones as they are,
 * "run" the run's stored servers with their keys unsealed (INFERENCE_KEYS_SECRET). Keys live in
 * D1, sealed, and are read here, never written into queue messages or feeder state.
 */
import type { Bindings } from "../api/bindings";
import { getRunInference } from "../api/storage/inference";
import type { EnvWorkerRef, EnvWorkerSpec } from "../core/wire/server-config";

export async function resolveSpec(
  env: Pick<Bindings, "DB" | "INFERENCE_KEYS_SECRET">,
  run: string,
  spec: EnvWorkerRef,
): Promise<EnvWorkerSpec> {
  if (spec.inference !== "run") return { ...spec, inference: spec.inference };
  const stored = await getRunInference(env.DB, run, env.INFERENCE_KEYS_SECRET);
  if (!stored || stored.servers.length === 0) {
    throw new Error(
      `run '${run}' has no inference servers for its env workers; set them with PUT /v1/runs/${run}/inference`,
    );
  }
  return { ...spec, inference: stored.servers };
}
