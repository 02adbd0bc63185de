/**
 * Shapes of the data that flows between environments, the rollout API and trainers, mirroring
 * Atropos' `ScoredDataGroup` / `ScoredDataItem` (snake_case on the wire). Each comes from the one
 * schema of a submitted group (`scoredDataSchema`, core/schemas.ts) and the chat schemas
 * (core/chat-schemas.ts): none is written out a second time here.
 */
import type { z } from "zod";
import type { submittedGroupSchema } from "./schemas";

export type { ChatMessage, ToolCall, ToolDefinition } from "./chat-schemas";

/**
 * One group of rollouts for the same item, as an environment submits it: the validated wire
 * group, with the trajectories agent envs send beside it.
 */
export type ScoredDataGroup = z.infer<typeof submittedGroupSchema>;

/** The fields of a group that hold one entry per sequence. */
type PerSequence =
  | "tokens"
  | "masks"
  | "scores"
  | "advantages"
  | "ref_logprobs"
  | "messages"
  | "inference_logprobs"
  | "overrides"
  | "distill_token_ids"
  | "distill_logprobs";

/** An entry of a per-sequence list (null and undefined stay as they are). */
type EntryOf<T> = T extends readonly (infer E)[] ? E : T;

/**
 * One rollout, as `collectTrajectory` returns it: one sequence's entry of each per-sequence field
 * of the group, and the group-wide ones (`mergeIntoGroup` makes a group of them).
 */
export type ScoredDataItem = {
  [K in keyof Pick<ScoredDataGroup, PerSequence>]: EntryOf<ScoredDataGroup[K]>;
} & Pick<ScoredDataGroup, "group_overrides" | "images">;
