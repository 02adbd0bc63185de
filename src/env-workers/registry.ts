/**
 * Every environment atropos-edge can run. Adding an env = one file under envs/ + one line below.
 */
import type { z } from "zod";
import { BaseEnv, type JsonValue } from "./base-env";
import { type BaseEnvConfig, parseEnvConfig } from "./config";
import { BlackjackConfigSchema, BlackjackEnv } from "./envs/blackjack";
import { blackjackSimulate } from "./envs/blackjack-simulate";
import { Gsm8kLiteConfigSchema, Gsm8kLiteEnv, gsm8kSimulate } from "./envs/gsm8k-lite";
import {
  LetterCountingConfigSchema,
  LetterCountingEnv,
  letterCountingSimulate,
} from "./envs/letter-counting";
import { LlmJudgeConfigSchema, LlmJudgeEnv, llmJudgeSimulate } from "./envs/llm-judge";
import { ToolUseConfigSchema, ToolUseEnv, toolUseSimulate } from "./envs/tool-use";
import type { InferenceClient, Tokenizer } from "./inference/types";
import type { SimulateFn } from "./simulate";

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
  /** How the local simulator's toy policy may answer an item (see docs/WRITING_ENVS.md). */
  simulate?: SimulateFn;
}

export interface DefineEnvOptions<I extends JsonValue> {
  simulate?: SimulateFn<I>;
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
  options: DefineEnvOptions<I> = {},
): EnvDefinition {
  const { simulate } = options;
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
    // why: the runtime hands back the items this env's getNextItem produced.
    ...(simulate ? { simulate: (item: JsonValue) => simulate(item as I) } : {}),
  };
}

const definitions = [
  defineEnv(
    Gsm8kLiteEnv,
    Gsm8kLiteConfigSchema,
    "GSM8K-style math word problems, boxed-answer accuracy (+1/−1)",
    { simulate: gsm8kSimulate },
  ),
  defineEnv(
    LetterCountingEnv,
    LetterCountingConfigSchema,
    "Count a letter in a string; 10-level curriculum",
    { simulate: letterCountingSimulate },
  ),
  defineEnv(
    ToolUseEnv,
    ToolUseConfigSchema,
    "Multi-turn calculator + key-value tools with process rewards",
    { simulate: toolUseSimulate },
  ),
  defineEnv(
    LlmJudgeEnv,
    LlmJudgeConfigSchema,
    "RLAIF: several LLM judges score answers (trimmed mean)",
    { simulate: llmJudgeSimulate },
  ),
  defineEnv(
    BlackjackEnv,
    BlackjackConfigSchema,
    "Multi-turn blackjack on a seeded deck (win/push/loss)",
    { simulate: blackjackSimulate },
  ),
];

export const envRegistry: Record<string, EnvDefinition> = Object.fromEntries(
  definitions.map((d) => [d.name, d]),
);

export function getEnvDefinition(name: string): EnvDefinition {
  const def = envRegistry[name];
  if (!def)
    throw new Error(`unknown env "${name}"; available: ${Object.keys(envRegistry).join(", ")}`);
  return def;
}
