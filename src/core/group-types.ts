/**
 * Shapes of the data that flows between environments, the rollout API and trainers.
 * These mirror Atropos' `ScoredDataGroup` / `ScoredDataItem` (snake_case on the wire).
 */
import type { Trajectory } from "./trajectory";

export interface ChatMessage {
  role: string;
  // Atropos accepts any content value (string, multimodal parts, null).
  content: unknown;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
  reward?: number;
  [extra: string]: unknown;
}

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A tool offered to the model (OpenAI's `tools` entries). */
export interface ToolDefinition {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** One group of rollouts for the same item, as an environment submits it. */
export interface ScoredDataGroup {
  tokens: number[][];
  masks: number[][];
  scores: number[];
  advantages?: number[][] | null;
  ref_logprobs?: number[][] | null;
  messages?: ChatMessage[][] | null;
  generation_params?: Record<string, unknown> | null;
  inference_logprobs?: number[][] | null;
  overrides?: Record<string, unknown>[] | null;
  group_overrides?: Record<string, unknown> | null;
  images?: unknown;
  env_id?: number | null;
  distill_token_ids?: number[][][] | null;
  distill_logprobs?: number[][][] | null;
  /** atropos-edge extension: policy version the rollouts were sampled under. */
  policy_version?: number | null;
  /**
   * atropos-edge extension: per sequence, each token's text as the env's tokenizer decodes it
   * (shown by the dashboard; never delivered to trainers).
   */
  token_texts?: string[][] | null;
  /**
   * atropos-edge extension: what agent envs did, step by step. Stored beside the group (GET
   * /v1/runs/{run}/groups/{id}/trajectories), never part of the group a trainer leases.
   */
  trajectories?: Trajectory[] | null;
}

/** One rollout, as `collectTrajectory` returns it. */
export interface ScoredDataItem {
  tokens: number[];
  masks: number[];
  scores: number;
  advantages?: number[] | null;
  ref_logprobs?: number[] | null;
  messages?: ChatMessage[] | null;
  inference_logprobs?: number[] | null;
  group_overrides?: Record<string, unknown> | null;
  overrides?: Record<string, unknown> | null;
  images?: unknown;
  distill_token_ids?: number[][] | null;
  distill_logprobs?: number[][] | null;
}
