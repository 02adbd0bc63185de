/**
 * Inference for CLI commands: an external server (--inference-url) or the in-process simulator
 * (a test double), wrapped in the env runtime's ServerManager; plus env construction.
 */

import { isServerType, serverTypeError } from "../core/server-config";
import type { BaseEnv, JsonValue } from "../env-workers/base-env";
import type { EnvDefinition } from "../env-workers/define-env";
import { ServerManager } from "../env-workers/inference/server-manager";
import { getTokenizer } from "../env-workers/tokenizers/index";
import { type Simulator, startSimulator } from "../sim/server";
import { type SimulatedEnvOptions, wireSimulation } from "./simulated-env";

export interface InferenceFlags {
  inferenceUrl?: string;
  serverType: string;
  model: string;
  apiKey?: string;
  tokenizer: string;
  simLatencyMs: number;
  simSeed: number;
  /**
   * Atropos `openai:` server configs (APIServerConfig fields). The flags above override the
   * first; the others are extra servers (unless the simulator is used).
   */
  servers?: Record<string, unknown>[];
}

export interface InferenceHandle {
  client: ServerManager;
  simulator: Simulator | null;
  describe: string;
  close(): Promise<void>;
}

export async function openInference(flags: InferenceFlags): Promise<InferenceHandle> {
  const serverType = flags.serverType;
  if (!isServerType(serverType)) throw serverTypeError(serverType);
  let simulator: Simulator | null = null;
  let baseUrl = flags.inferenceUrl;
  if (!baseUrl) {
    // The simulator answers every server type's requests, so --server-type is honoured.
    simulator = await startSimulator({
      port: 0,
      latencyMs: flags.simLatencyMs,
      seed: flags.simSeed,
      tokenizer: flags.tokenizer,
      model: flags.model,
    });
    baseUrl = `${simulator.url}/v1`;
  }
  const [first = {}, ...others] = flags.servers ?? [];
  const configs = [
    {
      ...first,
      base_url: baseUrl,
      server_type: serverType,
      model_name: flags.model,
      tokenizer_name: flags.tokenizer,
      api_key: flags.apiKey ?? "",
    },
    ...(simulator ? [] : others),
  ];
  if (!simulator) {
    for (const c of configs) await assertReachable(String(c.base_url), c.api_key as string);
  }
  // why: the entries were checked field by field against APIServerConfig (atropos-config.ts);
  // ServerManager validates the values.
  const client = new ServerManager(configs as ConstructorParameters<typeof ServerManager>[0]);
  return {
    client,
    simulator,
    describe: simulator
      ? `inference simulator (test double) at ${simulator.url}, spoken to as ${serverType}`
      : `${serverType} server at ${baseUrl}${configs.length > 1 ? ` (+${configs.length - 1} more)` : ""} (model ${flags.model})`,
    close: async () => {
      await simulator?.close();
    },
  };
}

/**
 * Fails fast, with what to do, when the inference server cannot be reached or refuses the key:
 * otherwise every rollout fails and a run shows nothing but zero progress. Any other answer
 * (even a 404 from a server without `/models`) means the server is there.
 */
async function assertReachable(baseUrl: string, apiKey: string | undefined): Promise<void> {
  const url = `${baseUrl.replace(/\/+$/, "")}/models`;
  let status: number;
  try {
    const res = await fetch(url, {
      headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
      signal: AbortSignal.timeout(10_000),
    });
    await res.arrayBuffer();
    status = res.status;
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const reason =
      error instanceof Error && error.name === "TimeoutError"
        ? "no answer within 10 s"
        : (cause?.code ?? cause?.message ?? String(error));
    throw new Error(
      `cannot reach the inference server at ${baseUrl} (${reason}): check --inference-url and that the server is running, or leave the flag out to use the built-in simulator`,
    );
  }
  if (status === 401 || status === 403) {
    throw new Error(
      `the inference server at ${baseUrl} refused the request (HTTP ${status} on GET /models): check --api-key`,
    );
  }
}

export async function createEnv(
  definition: EnvDefinition,
  config: Record<string, unknown>,
  inference: InferenceHandle,
  tokenizerName: string,
  observe: Pick<SimulatedEnvOptions, "onGroups" | "warn"> = {},
): Promise<BaseEnv<JsonValue>> {
  const tokenizer = await getTokenizer(tokenizerName);
  const env = definition.create(
    { tokenizer_name: tokenizerName, ...config },
    inference.client,
    tokenizer,
  );
  wireSimulation(env, definition, {
    sink: inference.simulator?.policy ?? null,
    warn: (line) => process.stderr.write(`${line}\n`),
    ...observe,
  });
  return env;
}
