/**
 * How an environment is packaged for the runtimes: `defineEnv(EnvClass, ConfigSchema, description)`
 * gives the CLI, `serve`/`process` and the Worker factory what they need to build it.
 */
import type { z } from "zod";
import { BaseEnv, type JsonValue } from "./base-env";
import { type BaseEnvConfig, parseEnvConfig } from "./config";
import type { InferenceClient, Tokenizer } from "./inference/types";

/**
 * How a simulated policy may answer an item (the local simulator plays it; nothing is sent over
 * the wire): `match` is a piece of the prompt that identifies the item, `candidates` are answers,
 * some good and some bad.
 */
export interface SimulatedAnswers {
  match: string;
  candidates: { text: string; label?: string }[];
}

export interface EnvOptions<I extends JsonValue> {
  simulate?: (item: I) => SimulatedAnswers;
}

export interface EnvDefinition {
  name: string;
  description: string;
  configSchema: z.ZodType<BaseEnvConfig>;
  /** The parsed defaults (what `{}` becomes). */
  defaultConfig: BaseEnvConfig;
  /** Whether the env defines an evaluation (overrides evaluate or evaluateWithSamples). */
  hasEvaluation: boolean;
  /** Validate `config` (partial, snake_case) and build the env. */
  create(config: unknown, inference: InferenceClient, tokenizer: Tokenizer): BaseEnv<JsonValue>;
  /** Answers a simulated policy may give for an item (see SimulatedAnswers). */
  simulate?: (item: JsonValue) => SimulatedAnswers;
}

type EnvClass<I extends JsonValue, C extends BaseEnvConfig> = (new (
  config: C,
  inference: InferenceClient,
  tokenizer: Tokenizer,
) => BaseEnv<I, C>) & { envName: string };

export function defineEnv<I extends JsonValue, C extends BaseEnvConfig>(
  envClass: EnvClass<I, C>,
  configSchema: z.ZodType<C>,
  description: string,
  options: EnvOptions<I> = {},
): EnvDefinition {
  return {
    name: envClass.envName,
    description,
    configSchema,
    defaultConfig: parseEnvConfig(configSchema, {}),
    hasEvaluation:
      envClass.prototype.evaluate !== BaseEnv.prototype.evaluate ||
      envClass.prototype.evaluateWithSamples !== BaseEnv.prototype.evaluateWithSamples,
    create: (config, inference, tokenizer) =>
      // why: items are typed per env; the runtime only moves them around as JSON.
      new envClass(
        parseEnvConfig(configSchema, config),
        inference,
        tokenizer,
      ) as unknown as BaseEnv<JsonValue>,
    // why: the runtime hands back the items this env produced, so they have its item type.
    simulate: options.simulate as ((item: JsonValue) => SimulatedAnswers) | undefined,
  };
}
