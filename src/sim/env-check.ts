/**
 * An end-to-end check of an env for its own tests: N groups rolled out against the inference
 * simulator (the toy policy, answering from the env's `simulate()`), with what a test wants to
 * assert: the scores vary (a constant reward teaches nothing, and GRPO drops such groups) and
 * every prompt the env sent was covered by `simulate()` (an uncovered prompt gets the simulator's
 * generic mix of answer shapes, so `npm start` would train on noise). Exported from
 * `atropos-edge/node` as runOnSimulator; docs/WRITING_ENVS.md shows it in a test.
 */
import type { ScoredDataGroup } from "../core/wire/group-types";
import type { BaseEnv, JsonValue } from "../env-sdk/base-env";
import type { EnvDefinition } from "../env-sdk/define-env";
import { processEnv } from "../env-sdk/runtime/process";
import { ServerManager } from "../inference/server-manager";
import { getTokenizer } from "../inference/tokenizers/index";
import { startSimulator } from "./server";
import { wireSimulation } from "./wire-simulation";

export interface SimulatedRunOptions {
  /** Groups to produce (default 8). */
  groups?: number;
  /** Env config fields over the env's defaults (e.g. group_size). */
  config?: Record<string, unknown>;
  /** Tokenizer the simulator and the env use (default qwen3). */
  tokenizer?: string;
  /** Simulator seed: the same seed gives the same rollouts (default 0). */
  seed?: number;
  /** Items rolled out at once (default 4). */
  concurrency?: number;
}

export interface SimulatedRun {
  /** Every group the env produced, in order. */
  groups: ScoredDataGroup[];
  /** Every rollout's score (items still in flight when the last group arrived included). */
  scores: number[];
  /** The distinct scores, ascending. */
  distinctScores: number[];
  /** Whether the scores differ between rollouts (false: the env's reward is constant here). */
  rewardsVary: boolean;
  /** Distinct prompts the simulator answered. */
  prompts: number;
  /** Prompts no `simulate()` registration matched (answered by the generic mix). */
  uncoveredPrompts: string[];
  /** Items that failed with an error. */
  failedItems: number;
  /** The env as it ran (its config, its state). */
  env: BaseEnv<JsonValue>;
}

/** Rolls out `options.groups` groups of `definition` against a fresh in-process simulator. */
export async function runOnSimulator(
  definition: EnvDefinition,
  options: SimulatedRunOptions = {},
): Promise<SimulatedRun> {
  const tokenizerName = options.tokenizer ?? "qwen3";
  const sim = await startSimulator({ port: 0, seed: options.seed ?? 0, tokenizer: tokenizerName });
  try {
    const prompts = new Set<string>();
    const uncovered = new Set<string>();
    const candidatesFor = sim.policy.candidatesFor.bind(sim.policy);
    sim.policy.candidatesFor = (promptText) => {
      const found = candidatesFor(promptText);
      prompts.add(promptText);
      if (!found) uncovered.add(promptText);
      return found;
    };
    const client = new ServerManager([
      {
        base_url: `${sim.url}/v1`,
        server_type: "vllm",
        model_name: "sim-policy",
        tokenizer_name: tokenizerName,
        api_key: "",
      },
    ]);
    const tokenizer = await getTokenizer(tokenizerName);
    const env = definition.create(
      { tokenizer_name: tokenizerName, ...options.config },
      client,
      tokenizer,
    );
    const scores: number[] = [];
    wireSimulation(env, definition, {
      sink: sim.policy,
      onGroups: (groups) => scores.push(...groups.flat()),
    });
    const groups: ScoredDataGroup[] = [];
    const progress = await processEnv(env, {
      groups: options.groups ?? 8,
      concurrency: options.concurrency ?? 4,
      onGroup: (group) => {
        groups.push(group);
      },
    });
    const distinctScores = [...new Set(scores)].sort((a, b) => a - b);
    return {
      groups,
      scores,
      distinctScores,
      rewardsVary: distinctScores.length > 1,
      prompts: prompts.size,
      uncoveredPrompts: [...uncovered],
      failedItems: progress.failures,
      env,
    };
  } finally {
    await sim.close();
  }
}
