/**
 * Inference for CLI commands: an external server (--inference-url) or the in-process simulator
 * (a test double), wrapped in the env runtime's ServerManager; plus env construction.
 */

import { isServerType, serverTypeError } from "../core/wire/server-config";
import type { BaseEnv, JsonValue } from "../env-sdk/base-env";
import type { EnvDefinition } from "../env-sdk/define-env";
import { ServerManager } from "../inference/server-manager";
import { getTokenizer } from "../inference/tokenizers/index";
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
  /** A GGUF file served by the llama.cpp engine in-process (instead of the simulator). */
  engine?: string;
  /**
   * Atropos `openai:` server configs (APIServerConfig fields). The flags above override the
   * first; the others are extra servers (unless the simulator is used).
   */
  servers?: Record<string, unknown>[];
}

export interface InferenceHandle {
  client: ServerManager;
  simulator: Simulator | null;
  /** The first server's base URL (the simulator's or the engine's when this process runs it). */
  baseUrl: string;
  describe: string;
  close(): Promise<void>;
}

export async function openInference(flags: InferenceFlags): Promise<InferenceHandle> {
  const serverType = flags.serverType;
  if (!isServerType(serverType)) throw serverTypeError(serverType);
  let simulator: Simulator | null = null;
  let engine: LocalEngine | null = null;
  let baseUrl = flags.inferenceUrl;
  if (flags.engine) {
    if (baseUrl) throw new Error("give --engine <file.gguf> or --inference-url, not both");
    engine = await startLocalEngine(flags.engine, flags.tokenizer, flags.model);
    baseUrl = `${engine.url}/v1`;
  } else if (!baseUrl) {
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
    ...(simulator || engine ? [] : others),
  ];
  if (!simulator && !engine) {
    for (const c of configs) await assertReachable(String(c.base_url), c.api_key as string);
  }
  // why: the entries were checked field by field against APIServerConfig (atropos-config.ts);
  // ServerManager validates the values.
  const client = new ServerManager(configs as ConstructorParameters<typeof ServerManager>[0]);
  return {
    client,
    simulator,
    baseUrl,
    describe: simulator
      ? `inference simulator (test double) at ${simulator.url}, spoken to as ${serverType}`
      : engine
        ? `llama.cpp engine (${flags.engine}) at ${engine.url}, spoken to as ${serverType}`
        : `${serverType} server at ${baseUrl}${configs.length > 1 ? ` (+${configs.length - 1} more)` : ""} (model ${flags.model})`,
    close: async () => {
      await simulator?.close();
      await engine?.close();
    },
  };
}

interface LocalEngine {
  url: string;
  close(): Promise<void>;
}

/**
 * `--engine FILE.gguf`: the llama.cpp engine in this process, refused when its vocabulary is not
 * the run's tokenizer's (ids would mean other tokens).
 */
async function startLocalEngine(
  file: string,
  tokenizerName: string,
  model: string,
): Promise<LocalEngine> {
  const { startEngine } = await import("../engine/index");
  const engine = await startEngine({ model: file, port: 0, modelName: model });
  const tokenizer = await getTokenizer(tokenizerName).catch(async (error: unknown) => {
    await engine.close();
    throw error;
  });
  const ours = engine.model.tokenizer.tokenizerVocabSize;
  if (tokenizer.vocabSize !== ours) {
    await engine.close();
    throw new Error(
      `--engine ${file} has a vocabulary of ${ours} tokens but the run's tokenizer ` +
        `${tokenizerName} has ${tokenizer.vocabSize}: pass --tokenizer for that model (a ` +
        "bundled name, or a directory with its tokenizer.json + tokenizer_config.json)",
    );
  }
  return engine;
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
