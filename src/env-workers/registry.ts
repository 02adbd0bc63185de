/**
 * The example environments that ship with atropos-edge (built-in names for the CLI and the
 * repository's own Worker). Users register their own envs with `createWorker({ envs })`.
 */
import { defineEnv, type EnvDefinition } from "./define-env";
import { EnvCatalog } from "./env-catalog";
import { BlackjackConfigSchema, BlackjackEnv } from "./envs/blackjack";
import { Gsm8kLiteConfigSchema, Gsm8kLiteEnv } from "./envs/gsm8k-lite";
import { LetterCountingConfigSchema, LetterCountingEnv } from "./envs/letter-counting";
import { LlmJudgeConfigSchema, LlmJudgeEnv } from "./envs/llm-judge";
import { ToolUseConfigSchema, ToolUseEnv } from "./envs/tool-use";

export { defineEnv, type EnvDefinition } from "./define-env";

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

/** The example envs, by name: built-in names for the CLI and this repository's Worker. */
export const builtinEnvs = new EnvCatalog(definitions);

export const envRegistry: Record<string, EnvDefinition> = Object.fromEntries(
  definitions.map((d) => [d.name, d]),
);

export function getEnvDefinition(name: string): EnvDefinition {
  return builtinEnvs.get(name);
}
