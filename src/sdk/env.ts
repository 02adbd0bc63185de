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
} from "../core/closed-loop/curriculum";
export { hashString, SeededRng } from "../core/codecs/rng";
export {
  FAMILY_TOOL_FORMATS,
  type ParsedToolText,
  TOOL_FORMAT_NAMES,
  TOOL_FORMATS,
  type ToolCallFormat,
  type ToolFormatName,
  toolFormat,
} from "../core/tool-calls/index";
export type {
  ChatMessage,
  ScoredDataGroup,
  ScoredDataItem,
  ToolCall,
} from "../core/wire/group-types";
export * from "../core/wire/judge-schemas";
export * from "../core/wire/tasks";
export {
  type GroupTrajectories,
  groupTrajectoriesSchema,
  type Trajectory,
  type TrajectoryStep,
  type TrajectoryToolCall,
  trajectorySchema,
  trajectoryStepSchema,
  trajectoryToolCallSchema,
} from "../core/wire/trajectory";
export {
  BaseEnv,
  DropGroupError,
  type EvalResult,
  type JsonObject,
  type JsonValue,
  mergeIntoGroup,
  type TrajectoriesResult,
  type TrajectoryResult,
} from "../env-sdk/base-env";
export {
  type BaseEnvConfig,
  type BaseEnvConfigInput,
  BaseEnvConfigSchema,
  type EnvConfigInit,
  parseEnvConfig,
} from "../env-sdk/config";
export * from "../env-sdk/datasets/index";
export { defineEnv, type EnvDefinition, type EnvOptions } from "../env-sdk/define-env";
export { passAtK, samplesPerItemMetrics } from "../env-sdk/evaluation";
export * from "../env-sdk/judges/index";
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
} from "../env-sdk/multi-turn";
export * from "../env-sdk/rewards/index";
export { type SampledChoice, sampleChat } from "../env-sdk/runtime/sampling";
export { PROMPT_MASK, scoredItemFromNode } from "../env-sdk/runtime/sequences";
export {
  type SendValidationOptions,
  validateGroupForSend,
} from "../env-sdk/send-validation";
export type { SimCandidate, SimulatedItem, SimulateFn } from "../env-sdk/simulate";
export {
  fileOpsTool,
  jsExecTool,
  pythonExecTool,
  type SandboxToolOptions,
} from "../env-sdk/tools/sandbox-tools";
export { allowedTools, type Tool, Toolbox, type ToolResult } from "../env-sdk/tools/toolbox";
export { loadTokenizer } from "../inference/tokenizers/lazy";
export { toolFormatFor } from "../inference/tool-calls";
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
} from "../inference/types";
export * from "../sandbox/index";
