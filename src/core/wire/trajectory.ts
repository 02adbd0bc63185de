/**
 * A trajectory: what an agent did, step by step, as data beside the tokens it was trained on.
 * Agent envs (tool_use) and inference-proxy sessions produce them; they are stored beside their
 * group (never inside the group the trainer leases), served by the v1 API and exported.
 */
import { z } from "zod";

export const trajectoryToolCallSchema = z.object({
  name: z.string(),
  parameters: z.record(z.string(), z.unknown()),
  /** The tool's output; null when it failed or has not run (a proxy session sees only calls). */
  result: z.string().nullable(),
  error: z.string().nullable(),
  latency_ms: z.number().min(0).nullable(),
});
export type TrajectoryToolCall = z.infer<typeof trajectoryToolCallSchema>;

export const trajectoryStepSchema = z.object({
  /** The model's reasoning or text before its action. */
  thought: z.string(),
  tool_call: trajectoryToolCallSchema.nullable(),
  /** What the agent saw after the action (the tool's message), null when nothing came back. */
  observation: z.string().nullable(),
  /** Milliseconds since the Unix epoch when the step was taken. */
  timestamp: z.number().int(),
});
export type TrajectoryStep = z.infer<typeof trajectoryStepSchema>;

export const trajectorySchema = z
  .object({
    /** The task as given to the agent (the first user message for a proxy session). */
    task: z.string(),
    steps: z.array(trajectoryStepSchema),
    final_response: z.string().nullable(),
    success: z.boolean().nullable(),
    /** A judge's score, when one scored the trajectory; else null. */
    judge_score: z.number().nullable(),
    /** Tokens of the sequence the trajectory was trained as (prompt and completions). */
    token_count: z.number().int().min(0),
    wall_time_ms: z.number().min(0),
    /** Which sequence of the group (index into tokens/masks) this trajectory is. */
    sequence: z.number().int().min(0),
    source: z.enum(["env", "proxy"]),
  })
  .describe("One agent trajectory, stored beside the group its sequence belongs to.");
export type Trajectory = z.infer<typeof trajectorySchema>;

/** The trajectories of one group, in sequence order. */
export const groupTrajectoriesSchema = z.object({
  run: z.string(),
  group_id: z.number().int(),
  trajectories: z.array(trajectorySchema),
});
export type GroupTrajectories = z.infer<typeof groupTrajectoriesSchema>;

/**
 * The `trajectories` a submitted group carries beside its 14 keys: null when it has none, the
 * validated list, or the reason it is invalid (answered 422 at loc body.trajectories).
 */
export function groupTrajectoriesOf(
  json: unknown,
): { ok: true; trajectories: Trajectory[] | null } | { ok: false; message: string } {
  if (!json || typeof json !== "object" || !("trajectories" in json)) {
    return { ok: true, trajectories: null };
  }
  const value = (json as { trajectories: unknown }).trajectories;
  if (value === null || value === undefined) return { ok: true, trajectories: null };
  const parsed = z.array(trajectorySchema).safeParse(value);
  if (parsed.success) return { ok: true, trajectories: parsed.data };
  const issue = parsed.error.issues[0];
  return {
    ok: false,
    message: `trajectories${issue?.path.length ? `.${issue.path.join(".")}` : ""}: ${issue?.message ?? "invalid"}`,
  };
}
