/**
 * `atropos-edge`: the public API for writing environments. Everything the repository's example
 * envs use comes from here; a user's project imports nothing else from this package except
 * `atropos-edge/worker` (its Worker entry), `atropos-edge/client` (trainers) and
 * `atropos-edge/node` (Node-side runtimes, tokenizers and the inference simulator, for scripts
 * and tests).
 */
export { z } from "zod";
export {
  Curriculum,
  type CurriculumChange,
  type CurriculumConfig,
  type CurriculumState,
  curriculumConfigSchema,
} from "../core/curriculum";
export type {
  ChatMessage,
  ScoredDataGroup,
  ScoredDataItem,
  ToolCall,
} from "../core/group-types";
export * from "../core/judge-schemas";
export { hashString, SeededRng } from "../core/rng";
export * from "../core/tasks";
export {
  type GroupTrajectories,
  groupTrajectoriesSchema,
  type Trajectory,
  type TrajectoryStep,
  type TrajectoryToolCall,
  trajectorySchema,
  trajectoryStepSchema,
  trajectoryToolCallSchema,
} from "../core/trajectory";
export {
  BaseEnv,
  DropGroupError,
  type EvalResult,
  type JsonObject,
  type JsonValue,
  mergeIntoGroup,
  type TrajectoriesResult,
  type TrajectoryResult,
} from "../env-workers/base-env";
export {
  type BaseEnvConfig,
  type BaseEnvConfigInput,
  BaseEnvConfigSchema,
  type EnvConfigInit,
  parseEnvConfig,
} from "../env-workers/config";
export * from "../env-workers/datasets/index";
export { defineEnv, type EnvDefinition, type EnvOptions } from "../env-workers/define-env";
export { passAtK, samplesPerItemMetrics } from "../env-workers/evaluation";
export type {
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionParams,
  CompletionResult,
  InferenceClient,
  ManagedServer,
  SequenceNode,
  Tokenizer,
  ToolDefinition,
} from "../env-workers/inference/types";
export * from "../env-workers/judges/index";
export * from "../env-workers/rewards/index";
export { type SampledChoice, sampleChat } from "../env-workers/runtime/sampling";
export { PROMPT_MASK, scoredItemFromNode } from "../env-workers/runtime/sequences";
export * from "../env-workers/sandbox/index";
export {
  type SendValidationOptions,
  validateGroupForSend,
} from "../env-workers/send-validation";
export type { SimCandidate, SimulatedItem, SimulateFn } from "../env-workers/simulate";
export { loadTokenizer } from "../env-workers/tokenizers/lazy";
