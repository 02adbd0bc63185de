/**
 * Inference for CLI commands: an external server (--inference-url) or the in-process simulator
 * (a test double), wrapped in the env runtime's ServerManager; plus env construction.
 */
import type { BaseEnv, JsonValue } from "../env-workers/base-env";
import { ServerManager } from "../env-workers/inference/server-manager";
import type { ServerType } from "../env-workers/inference/types";
import { getEnvDefinition } from "../env-workers/registry";
import { getTokenizer } from "../env-workers/tokenizers/index";
import { type Simulator, startSimulator } from "../sim/server";

export interface InferenceFlags {
  inferenceUrl?: string;
  serverType: string;
  model: string;
  apiKey?: string;
  tokenizer: string;
  simLatencyMs: number;
  simSeed: number;
}

export interface InferenceHandle {
  client: ServerManager;
  simulator: Simulator | null;
  describe: string;
  close(): Promise<void>;
}

const SERVER_TYPES: ServerType[] = ["openai", "vllm", "sglang", "trl"];

export async function openInference(flags: InferenceFlags): Promise<InferenceHandle> {
  if (!SERVER_TYPES.includes(flags.serverType as ServerType)) {
    throw new Error(`--server-type must be one of ${SERVER_TYPES.join(", ")}`);
  }
  let simulator: Simulator | null = null;
  let baseUrl = flags.inferenceUrl;
  let serverType = flags.serverType as ServerType;
  if (!baseUrl) {
    simulator = await startSimulator({
      port: 0,
      latencyMs: flags.simLatencyMs,
      seed: flags.simSeed,
      tokenizer: flags.tokenizer,
      model: flags.model,
    });
    baseUrl = `${simulator.url}/v1`;
    serverType = "vllm";
  }
  const client = new ServerManager([
    {
      base_url: baseUrl,
      server_type: serverType,
      model_name: flags.model,
      tokenizer_name: flags.tokenizer,
      api_key: flags.apiKey ?? "",
    },
  ]);
  return {
    client,
    simulator,
    describe: simulator
      ? `inference simulator (test double) at ${simulator.url}`
      : `${serverType} server at ${baseUrl} (model ${flags.model})`,
    close: async () => {
      await simulator?.close();
    },
  };
}

export async function createEnv(
  name: string,
  config: Record<string, unknown>,
  inference: InferenceHandle,
  tokenizerName: string,
): Promise<BaseEnv<JsonValue>> {
  const definition = getEnvDefinition(name);
  const tokenizer = await getTokenizer(tokenizerName);
  return definition.create(
    { tokenizer_name: tokenizerName, ...config },
    inference.client,
    tokenizer,
  );
}
