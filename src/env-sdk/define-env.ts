/**
 * How an environment is packaged for the runtimes: `defineEnv(EnvClass, ConfigSchema, description)`
 * gives the CLI, `serve`/`process` and the Worker factory what they need to build it.
 */
import type { z } from "zod";
import type { InferenceClient, Tokenizer } from "../inference/types";
import { BaseEnv, type EnvServices, type JsonValue } from "./base-env";
import { type BaseEnvConfig, type EnvConfigInit, parseEnvConfig } from "./config";
import type { SimulateFn } from "./simulate";

export interface EnvOptions<I extends JsonValue> {
  /** How the local simulator's toy policy may answer an item (docs/WRITING_ENVS.md). */
  simulate?: SimulateFn<I>;
}

export interface EnvDefinition {
  name: string;
  description: string;
  configSchema: z.ZodType<BaseEnvConfig>;
  /** The parsed defaults (what `{}` becomes). */
  defaultConfig: BaseEnvConfig;
  /** Whether the env defines an evaluation (overrides evaluate or evaluateWithSamples). */
  hasEvaluation: boolean;
  /**
   * Validates `config` (partial, snake_case) into the env's config. `create()` takes the result as
   * it is, so a runtime that needs the config itself parses it once.
   */
  parseConfig(config: unknown): BaseEnvConfig;
  /** Validate `config` (partial, snake_case) and build the env with the runtime's services. */
  create(
    config: unknown,
    inference: InferenceClient,
    tokenizer: Tokenizer,
    services?: EnvServices,
  ): BaseEnv<JsonValue>;
  /** How the local simulator's toy policy may answer an item (docs/WRITING_ENVS.md). */
  simulate?: SimulateFn;
  /** The env class' static configInit() (Atropos' config_init); absent = no defaults. */
  configInit?: () => EnvConfigInit;
}

type EnvClass<I extends JsonValue, C extends BaseEnvConfig> = (new (
  config: C,
  inference: InferenceClient,
  tokenizer: Tokenizer,
) => BaseEnv<I, C>) & { envName: string; configInit(): EnvConfigInit };

export function defineEnv<I extends JsonValue, C extends BaseEnvConfig>(
  envClass: EnvClass<I, C>,
  configSchema: z.ZodType<C>,
  description: string,
  options: EnvOptions<I> = {},
): EnvDefinition {
  const { simulate } = options;
  // Configs this definition parsed: create() does not parse them again.
  const parsed = new WeakSet<object>();
  const parseConfig = (config: unknown): C => {
    if (typeof config === "object" && config !== null && parsed.has(config)) return config as C;
    const result = parseEnvConfig(configSchema, config);
    parsed.add(result);
    return result;
  };
  return {
    name: envClass.envName,
    description,
    configSchema,
    defaultConfig: parseEnvConfig(configSchema, {}),
    parseConfig,
    hasEvaluation:
      envClass.prototype.evaluate !== BaseEnv.prototype.evaluate ||
      envClass.prototype.evaluateWithSamples !== BaseEnv.prototype.evaluateWithSamples,
    configInit: () => envClass.configInit(),
    create: (config, inference, tokenizer, services = {}) => {
      const env = new envClass(parseConfig(config), inference, tokenizer);
      env.bindServices(services);
      // why: items are typed per env; the runtime only moves them around as JSON.
      return env as unknown as BaseEnv<JsonValue>;
    },
    // why: the runtime hands back the items this env's getNextItem produced.
    ...(simulate ? { simulate: (item: JsonValue) => simulate(item as I) } : {}),
  };
}
