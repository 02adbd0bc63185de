/**
 * A run's task registry (POST/GET /v1/runs/{run}/tasks): the task types contributors register,
 * the proxy sessions opened for one of them, and the per-task, per-contributor tallies of what
 * was submitted (tasks files, src/core/wire/tasks.ts, describe tasks for in-Worker envs; these are
 * contributors'). Shared by the API, its OpenAPI document and the dashboard.
 */
import { z } from "zod";
import { MAX_DIFFICULTY, MIN_DIFFICULTY } from "./tasks";

/** Task names go in URLs and session ids: the characters of a session id, at most 64. */
export const taskNameSchema = z
  .string()
  .regex(/^[\w.-]{1,64}$/, "a task name is 1-64 letters, digits, '_', '-' or '.'");

export const registerTaskRequestSchema = z.object({
  name: taskNameSchema.describe("The task type, e.g. `security_analysis` (TaskSchema.task_type)."),
  difficulty: z.number().int().min(MIN_DIFFICULTY).max(MAX_DIFFICULTY).nullable().optional(),
  required_tools: z.array(z.string().min(1).max(100)).max(64).optional(),
  description: z.string().max(4000).optional(),
});
export type RegisterTaskRequest = z.infer<typeof registerTaskRequestSchema>;

const tallySchema = z.object({
  groups: z.number().int().describe("Groups submitted through sessions opened for the task."),
  mean_score: z.number().nullable().describe("Mean of those groups' mean scores."),
});

export const taskContributorSchema = tallySchema.extend({
  /** null: groups submitted with the admin token or on an open local API. */
  token_id: z.string().nullable(),
  token_name: z.string().nullable(),
});

export const taskSchema = tallySchema.extend({
  name: z.string(),
  difficulty: z.number().int().nullable(),
  required_tools: z.array(z.string()),
  description: z.string(),
  /** The token that registered the task (null: admin token or open local API). */
  registered_by: z.string().nullable(),
  registered_by_name: z.string().nullable(),
  created_at: z.number().int(),
  updated_at: z.number().int(),
  contributors: z.array(taskContributorSchema),
});
export type TaskInfo = z.infer<typeof taskSchema>;

export const registerTaskResponseSchema = z.object({
  task: taskSchema,
  /** "created", "updated" (the registrant changed it) or "unchanged" (a repeated registration). */
  status: z.enum(["created", "updated", "unchanged"]),
});

export const taskListSchema = z.object({ run: z.string(), tasks: z.array(taskSchema) });
export type TaskList = z.infer<typeof taskListSchema>;

/** POST /v1/runs/{run}/proxy/{session}/open: a session for a registered task. */
export const openSessionRequestSchema = z.object({
  task: taskNameSchema.describe("A task registered in the run; the group is attributed to it."),
});

export const openSessionResponseSchema = z.object({
  session: z.string(),
  task: z.string().nullable(),
  status: z.enum(["open", "finished"]),
  /** The session's OpenAI base URL, relative to the API origin. */
  base_url: z.string(),
  expires_at: z.number().int(),
  /** Set once the session is finished: open again to learn what a lost finish stored. */
  group_id: z.number().int().nullable(),
});
