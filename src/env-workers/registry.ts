/**
 * The example environments that ship with atropos-edge (built-in names for the CLI and the
 * repository's own Worker). Users register their own envs with `createWorker({ envs })`.
 */
import { defineEnv, type EnvDefinition } from "./define-env";
import { EnvCatalog } from "./env-catalog";
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

export { defineEnv, type EnvDefinition } from "./define-env";

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

/** The example envs, by name: built-in names for the CLI and this repository's Worker. */
export const builtinEnvs = new EnvCatalog(definitions);

export const envRegistry: Record<string, EnvDefinition> = Object.fromEntries(
  definitions.map((d) => [d.name, d]),
);

export function getEnvDefinition(name: string): EnvDefinition {
  return builtinEnvs.get(name);
}
