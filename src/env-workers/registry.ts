/**
 * Every environment atropos-edge can run. Adding an env = one file under envs/ + one line below.
 */
import type { z } from "zod";
import { BaseEnv, type JsonValue } from "./base-env";
import { type BaseEnvConfig, parseEnvConfig } from "./config";
import { BlackjackConfigSchema, BlackjackEnv } from "./envs/blackjack";
import { Gsm8kLiteConfigSchema, Gsm8kLiteEnv } from "./envs/gsm8k-lite";
import { LetterCountingConfigSchema, LetterCountingEnv } from "./envs/letter-counting";
import { LlmJudgeConfigSchema, LlmJudgeEnv } from "./envs/llm-judge";
import { ToolUseConfigSchema, ToolUseEnv } from "./envs/tool-use";
import type { InferenceClient, Tokenizer } from "./inference/types";

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
  };
}

const definitions = [
  defineEnv(
    Gsm8kLiteEnv,
    Gsm8kLiteConfigSchema,
    "GSM8K-style math word problems, boxed-answer accuracy (+1/−1)",
  ),
  defineEnv(
    LetterCountingEnv,
    LetterCountingConfigSchema,
    "Count a letter in a string; 10-level curriculum",
  ),
  defineEnv(
    ToolUseEnv,
    ToolUseConfigSchema,
    "Multi-turn calculator + key-value tools with process rewards",
  ),
  defineEnv(
    LlmJudgeEnv,
    LlmJudgeConfigSchema,
    "RLAIF: several LLM judges score answers (trimmed mean)",
  ),
  defineEnv(
    BlackjackEnv,
    BlackjackConfigSchema,
    "Multi-turn blackjack on a seeded deck (win/push/loss)",
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
