/**
 * The example environments that ship with atropos-edge (built-in names for the CLI and the
 * repository's own Worker). Users register their own envs with `createWorker({ envs })`.
 */
import type { EnvDefinition } from "../env-sdk/define-env";
import { EnvCatalog } from "../env-sdk/env-catalog";
import agentTasks from "./agent-tasks";
import blackjack from "./blackjack";
import codeExec from "./code-exec";
import gsm8kLite from "./gsm8k-lite";
import letterCounting from "./letter-counting";
import llmJudge from "./llm-judge";
import sortLetters from "./sort-letters";
import toolUse from "./tool-use";

export { defineEnv, type EnvDefinition } from "../env-sdk/define-env";

const definitions = [
  gsm8kLite,
  letterCounting,
  toolUse,
  llmJudge,
  blackjack,
  codeExec,
  agentTasks,
  sortLetters,
];

/** The example envs, by name: built-in names for the CLI and this repository's Worker. */
export const builtinEnvs = new EnvCatalog(definitions);

export const envRegistry: Record<string, EnvDefinition> = Object.fromEntries(
  definitions.map((d) => [d.name, d]),
);

export function getEnvDefinition(name: string): EnvDefinition {
  return builtinEnvs.get(name);
}
