/**
 * Shapes of the judge panel: the endpoints judges run on (distinct from the policy's servers),
 * the five-dimension rubric weights, a judge's fitted calibration, and the report a judged group
 * carries in `group_overrides.judge`.
 */
import { z } from "zod";
import { SERVER_TYPES } from "./server-config";
import { trajectoryStepSchema, trajectoryToolCallSchema } from "./trajectory";

/** The rubric's dimensions, each scored 0–10 by a judge. */
export const RUBRIC_DIMENSIONS = [
  "task_completion",
  "reasoning_quality",
  "tool_usage",
  "error_handling",
  "efficiency",
] as const;
export type RubricDimension = (typeof RUBRIC_DIMENSIONS)[number];

/** What each dimension asks, in the judge prompt. */
export const RUBRIC_QUESTIONS: Record<RubricDimension, string> = {
  task_completion: "Does the final response fully address the task?",
  reasoning_quality: "Is the reasoning logical and to the point?",
  tool_usage: "Are the tools and their parameters well chosen (or rightly not used)?",
  error_handling: "Are errors noticed and handled when they happen?",
  efficiency: "Are unnecessary steps avoided?",
};

export const DEFAULT_RUBRIC_WEIGHTS: Record<RubricDimension, number> = {
  task_completion: 0.4,
  reasoning_quality: 0.2,
  tool_usage: 0.15,
  error_handling: 0.1,
  efficiency: 0.15,
};

/** Weights of the composite score; normalised to sum 1 when used. */
export const RubricWeightsSchema = z
  .object({
    task_completion: z.number().min(0).default(DEFAULT_RUBRIC_WEIGHTS.task_completion),
    reasoning_quality: z.number().min(0).default(DEFAULT_RUBRIC_WEIGHTS.reasoning_quality),
    tool_usage: z.number().min(0).default(DEFAULT_RUBRIC_WEIGHTS.tool_usage),
    error_handling: z.number().min(0).default(DEFAULT_RUBRIC_WEIGHTS.error_handling),
    efficiency: z.number().min(0).default(DEFAULT_RUBRIC_WEIGHTS.efficiency),
  })
  .strict()
  .refine((w) => Object.values(w).some((v) => v > 0), {
    message: "at least one rubric weight must be above 0",
  });
export type RubricWeights = z.output<typeof RubricWeightsSchema>;

/** One judge: an OpenAI-compatible endpoint and model, not the policy's. */
export const JudgeEndpointSchema = z
  .object({
    name: z.string().min(1).describe("Shown in reports and keys the judge's calibration."),
    base_url: z.string().min(1).describe("…/v1 of an OpenAI-compatible server."),
    model_name: z.string().min(1).default("judge"),
    server_type: z.enum(SERVER_TYPES).default("openai"),
    api_key: z.string().default(""),
    /** Seconds per request. */
    timeout: z.number().positive().default(120),
    temperature: z.number().min(0).default(0),
    max_tokens: z.number().int().positive().default(512),
  })
  .strict();
export type JudgeEndpoint = z.output<typeof JudgeEndpointSchema>;
export type JudgeEndpointInput = z.input<typeof JudgeEndpointSchema>;

/** score = clamp01(scale × raw + offset); kept only when it lowered held-out error. */
export const JudgeCalibrationSchema = z
  .object({
    offset: z.number(),
    scale: z.number(),
    accepted: z.boolean(),
    heldout_mae_before: z.number().min(0),
    heldout_mae_after: z.number().min(0),
    n_fit: z.number().int().min(0),
    n_heldout: z.number().int().min(0),
  })
  .strict();
export type JudgeCalibration = z.output<typeof JudgeCalibrationSchema>;

/** A stored calibration file: one entry per judge name. */
export const CalibrationFileSchema = z
  .object({
    version: z.literal(1),
    judges: z.record(z.string(), JudgeCalibrationSchema),
  })
  .strict();
export type CalibrationFile = z.output<typeof CalibrationFileSchema>;

export const JUDGE_MODES = ["pointwise", "ranking"] as const;
export type JudgeMode = (typeof JUDGE_MODES)[number];

/** What a judged group records under `group_overrides.judge` (the dashboard shows it). */
export const JudgeReportSchema = z.object({
  mode: z.enum(JUDGE_MODES),
  judges: z.array(z.string()),
  /** [judge][answer]: the judge's score in 0..1 after its calibration; null = failed. */
  scores: z.array(z.array(z.number().nullable())),
  /** Panel score per answer (trimmed mean of the judges that scored it). */
  panel: z.array(z.number().nullable()),
  failures: z.array(
    z.object({ judge: z.string(), answer: z.number().int().nullable(), reason: z.string() }),
  ),
  /** Mean Kendall's tau over judge pairs (null with fewer than two judges scoring two answers). */
  kendall_tau: z.number().nullable(),
  /** Judges whose accepted calibration was applied. */
  calibrated: z.array(z.string()),
  /** Judge calls made for this group. */
  calls: z.number().int().min(0),
});
export type JudgeReport = z.output<typeof JudgeReportSchema>;

/** A trajectory step in a labels file: a `TrajectoryStep` once parsed, with optional fields filled. */
const labelledStepSchema = trajectoryStepSchema.extend({
  thought: trajectoryStepSchema.shape.thought.default(""),
  tool_call: trajectoryToolCallSchema
    .extend({
      parameters: trajectoryToolCallSchema.shape.parameters.default({}),
      result: trajectoryToolCallSchema.shape.result.default(null),
      error: trajectoryToolCallSchema.shape.error.default(null),
      latency_ms: trajectoryToolCallSchema.shape.latency_ms.default(null),
    })
    .nullable()
    .default(null),
  observation: trajectoryStepSchema.shape.observation.default(null),
  timestamp: trajectoryStepSchema.shape.timestamp.default(0),
});

/** One labelled trajectory for fitting calibrations (a line of a labels JSONL file). */
export const LabelledTrajectorySchema = z
  .object({
    task: z.string().min(1),
    /** Rendered steps text, or trajectory steps (fields a hand-written label may leave out default). */
    steps: z.union([z.string(), z.array(labelledStepSchema)]).default(""),
    final_response: z.string().nullable(),
    /** The reference score, 0..1. */
    label: z.number().min(0).max(1),
  })
  .strict();
export type LabelledTrajectory = z.output<typeof LabelledTrajectorySchema>;

/** A labels JSONL file's text → labelled trajectories; errors name the line and field. */
export function parseLabelledSet(text: string, fileName: string): LabelledTrajectory[] {
  const out: LabelledTrajectory[] = [];
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch (err) {
      throw new Error(`${fileName}:${i + 1}: not valid JSON (${(err as Error).message})`);
    }
    const parsed = LabelledTrajectorySchema.safeParse(record);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new Error(
        `${fileName}:${i + 1}: ${issue.path.join(".") || "record"}: ${issue.message}`,
      );
    }
    out.push(parsed.data);
  });
  if (out.length === 0) throw new Error(`${fileName}: no labelled trajectories`);
  return out;
}
