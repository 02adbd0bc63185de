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
  FAMILY_TOOL_FORMATS,
  type ParsedToolText,
  TOOL_FORMAT_NAMES,
  TOOL_FORMATS,
  type ToolCallFormat,
  type ToolFormatName,
  toolFormat,
} from "../core/tool-calls/index";
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
export { toolFormatFor } from "../env-workers/inference/tool-calls";
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
export {
  type AssistantTurn,
  assistantTurn,
  type EpisodeStart,
  MultiTurnEnv,
  type MultiTurnEpisode,
  ToolEnvConfigSchema,
  type ToolOutcome,
  type TurnRecord,
  thoughtOf,
  trajectorySteps,
} from "../env-workers/multi-turn";
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
export {
  fileOpsTool,
  jsExecTool,
  pythonExecTool,
  type SandboxToolOptions,
} from "../env-workers/tools/sandbox-tools";
export { allowedTools, type Tool, Toolbox, type ToolResult } from "../env-workers/tools/toolbox";
