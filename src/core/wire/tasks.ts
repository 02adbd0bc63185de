/**
 * Declarative tasks: one task per record in a tasks file (JSONL, JSON or YAML) with its type,
 * difficulty, the tools it needs, the prompt and how its answers are evaluated — a reference
 * answer, hidden tests run in a sandbox, or a judge rubric.
 */
import { z } from "zod";
import { RubricWeightsSchema } from "./judge-schemas";

export const ReferenceEvaluationSchema = z
  .object({
    kind: z.literal("reference"),
    answer: z.string().min(1),
    /** exact: equal after trimming (case-insensitive); contains: substring; numeric: same number. */
    match: z.enum(["exact", "contains", "numeric"]).default("exact"),
  })
  .strict();

export const HiddenTestsEvaluationSchema = z
  .object({
    kind: z.literal("hidden_tests"),
    /** Test code the sandbox runs against the answer's code; never shown to the policy. */
    tests: z.string().min(1),
    language: z.string().min(1).default("python"),
    /** A known-good solution: checks the tests, and lets the simulator answer; never shown. */
    solution: z.string().optional(),
  })
  .strict();

export const JudgeEvaluationSchema = z
  .object({
    kind: z.literal("judge"),
    /** Task-specific criteria added to the five-dimension rubric. */
    rubric: z.string().default(""),
    weights: RubricWeightsSchema.optional(),
  })
  .strict();

export const EvaluationSchema = z.discriminatedUnion("kind", [
  ReferenceEvaluationSchema,
  HiddenTestsEvaluationSchema,
  JudgeEvaluationSchema,
]);
export type Evaluation = z.output<typeof EvaluationSchema>;

export const MIN_DIFFICULTY = 1;
export const MAX_DIFFICULTY = 10;

export const TaskSchema = z
  .object({
    id: z.string().min(1).optional(),
    task_type: z.string().min(1),
    difficulty: z.number().int().min(MIN_DIFFICULTY).max(MAX_DIFFICULTY),
    required_tools: z.array(z.string().min(1)).default([]),
    prompt: z.string().min(1),
    evaluation: EvaluationSchema,
  })
  .strict();
export type TaskInput = z.input<typeof TaskSchema>;
/** A task with its id filled in (`task-<n>` by position when the file gives none). */
export type Task = z.output<typeof TaskSchema> & { id: string };

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length ? `${i.path.join(".")}: ` : ""}${i.message}`)
    .join("; ");
}

/**
 * Validates records (objects from any format); `source` names the file, `where(i)` record i in
 * messages.
 */
export function parseTasks(
  records: unknown[],
  source: string,
  where: (i: number) => string = (i) => `${source} task ${i + 1}`,
): Task[] {
  if (records.length === 0) throw new Error(`${source}: no tasks`);
  const tasks: Task[] = [];
  const seen = new Map<string, number>();
  records.forEach((record, i) => {
    const parsed = TaskSchema.safeParse(record);
    if (!parsed.success) throw new Error(`${where(i)}: ${describeIssues(parsed.error)}`);
    const id = parsed.data.id ?? `task-${i + 1}`;
    const earlier = seen.get(id);
    if (earlier !== undefined) {
      throw new Error(`${where(i)}: id "${id}" is already used by ${where(earlier)}`);
    }
    seen.set(id, i);
    tasks.push({ ...parsed.data, id });
  });
  return tasks;
}

export const TASK_ORDERS = ["file", "easy_first", "hard_first"] as const;
export type TaskOrder = (typeof TASK_ORDERS)[number];

/** The tasks within [minDifficulty, maxDifficulty], in the given order (stable within a level). */
export function selectTasks(
  tasks: readonly Task[],
  options: { minDifficulty?: number; maxDifficulty?: number; order?: TaskOrder } = {},
): Task[] {
  const min = options.minDifficulty ?? MIN_DIFFICULTY;
  const max = options.maxDifficulty ?? MAX_DIFFICULTY;
  const kept = tasks.filter((t) => t.difficulty >= min && t.difficulty <= max);
  const order = options.order ?? "file";
  if (order === "file") return kept;
  const sign = order === "easy_first" ? 1 : -1;
  return kept
    .map((t, i) => ({ t, i }))
    .sort((a, b) => sign * (a.t.difficulty - b.t.difficulty) || a.i - b.i)
    .map(({ t }) => t);
}

/** The distinct difficulty levels present, ascending. */
export function difficultyLevels(tasks: readonly Task[]): number[] {
  return [...new Set(tasks.map((t) => t.difficulty))].sort((a, b) => a - b);
}
