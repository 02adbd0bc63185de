/**
 * agent_tasks' config schema and the shapes its dependencies take (the sandbox test runner, the
 * judge factory); agent-tasks.ts is the env itself.
 */
import {
  JUDGE_MODES,
  JudgeCalibrationSchema,
  JudgeEndpointSchema,
  type PanelJudge,
  RubricWeightsSchema,
  TASK_ORDERS,
  type Task,
  TaskSchema,
  ToolEnvConfigSchema,
  z,
} from "../sdk/env";
import { AGENT_EVAL_CONFIG } from "./agent-tasks-eval";
import { AGENT_TOOL_CONFIG, type AgentToolDeps } from "./tools/agent-tools";

export const AgentTasksConfigSchema = ToolEnvConfigSchema.extend({
  /** The tasks (the CLI reads them from `tasks.task_file`); validated with TaskSchema. */
  tasks: z.array(TaskSchema).default([]),
  /** Tools offered to the policy (each task's required_tools must be among them). */
  tools: z.array(z.string()).default(["calculator", "kv_get", "kv_set"]),
  max_steps_per_trajectory: z.number().int().positive().default(6),
  ...AGENT_TOOL_CONFIG,
  ...AGENT_EVAL_CONFIG,
  /** Limits of one answer's hidden-test run in the sandbox. */
  test_timeout_ms: z.number().int().positive().max(60_000).default(5000),
  test_memory_mb: z.number().int().positive().max(1024).default(128),
  temperature: z.number().min(0).default(1.0),
  judges: z.array(JudgeEndpointSchema).default([]),
  /** Judges on the panel (default: one per endpoint); more reuse endpoints with other seeds. */
  n_judges: z.number().int().positive().nullable().default(null),
  /** Answers scored by fewer judges drop the group. */
  min_judges: z.number().int().positive().default(2),
  judge_mode: z.enum(JUDGE_MODES).default("pointwise"),
  judge_weights: RubricWeightsSchema.optional(),
  /** Fitted calibrations by judge name (a calibration file's `judges`). */
  calibration: z.record(z.string(), JudgeCalibrationSchema).default({}),
  order: z.enum(TASK_ORDERS).default("easy_first"),
  min_difficulty: z.number().int().min(1).max(10).default(1),
  max_difficulty: z.number().int().min(1).max(10).default(10),
  curriculum: z.enum(["none", "adaptive"]).default("none"),
  advance_threshold: z.number().min(0).max(1).default(0.7),
  advance_window: z.number().int().positive().default(4),
});
export type AgentTasksConfig = z.output<typeof AgentTasksConfigSchema>;

/** Items are the tasks themselves (small JSON records; an item travels in a queue message). */
export type AgentTaskItem = Task;

export interface TestRunResult {
  passed: number;
  total: number;
  output?: string;
}

/** Runs hidden tests against an answer's code (default: Python in the env's sandbox, `this.sandbox()`). */
export type RunTests = (
  code: string,
  tests: string,
  options: { language: string; taskId: string },
) => Promise<TestRunResult>;

export interface AgentTasksDeps extends AgentToolDeps {
  /** Replaces the sandbox for hidden tests (other languages, another test runner). */
  runTests?: RunTests;
  /** Builds the panel's judges (default: one ServerManager per configured endpoint). */
  judges?: (config: AgentTasksConfig) => PanelJudge[];
}
