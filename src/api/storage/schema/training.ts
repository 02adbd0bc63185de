/**
 * What a run learns from and reports: trainer metrics, the regression guard, evaluation
 * baselines, the run's events and its registered tasks.
 */
import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Every metric of a run, one value per (name, env, step, kind): statistics the API computes when it forms
 * a batch (kind "train"), values envs report (kind "env": observe()/metrics(), drop counts,
 * curriculum) and evaluation results (kind "eval"). A second value for the same key replaces the first.
 */
export const metrics = sqliteTable(
  "metrics",
  {
    run: text("run").notNull(),
    name: text("name").notNull(),
    /** -1 for run-wide values (throughput). */
    envId: integer("env_id").notNull(),
    step: integer("step").notNull(),
    /** The run's policy version when the value was recorded (null when the reporter did not say). */
    policyVersion: integer("policy_version"),
    value: real("value").notNull(),
    kind: text("kind", { enum: ["train", "env", "eval"] }).notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.run, t.name, t.envId, t.step, t.kind] }),
    index("metrics_by_step").on(t.run, t.step),
  ],
);

/**
 * The statistics the API computes for each batch it forms (kind "train" in the metrics API), one
 * row per (step, env) holding every value as a JSON object: a step's values land on one page
 * instead of one page per name, as in `metrics`, whose key leads with the name. The metrics API
 * reads them together with `metrics` (storage/metrics.ts).
 */
export const batchStatistics = sqliteTable(
  "batch_statistics",
  {
    run: text("run").notNull(),
    step: integer("step").notNull(),
    /** -1 for run-wide values (throughput) and groups without an env. */
    envId: integer("env_id").notNull(),
    /** The run's policy version when the batch was formed. */
    policyVersion: integer("policy_version"),
    createdAt: integer("created_at").notNull(),
    /** JSON object: metric name → value (names whose value is undefined are left out). */
    statistics: text("statistics").notNull(),
  },
  (t) => [primaryKey({ columns: [t.run, t.step, t.envId] })],
);

/** The run's regression guard (absent: on, factor 0.95, alert only, no webhook). */
export const regressionGuards = sqliteTable("regression_guards", {
  run: text("run").primaryKey(),
  enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
  factor: real("factor").notNull().default(0.95),
  /** JSON string[]: metrics where smaller is better. */
  lowerIsBetter: text("lower_is_better").notNull().default("[]"),
  /** JSON of a GuardAction (src/core/closed-loop/regression-guard.ts). */
  action: text("action").notNull(),
  webhookUrl: text("webhook_url"),
  updatedAt: integer("updated_at").notNull(),
});

/** Per env and evaluation metric: the value evaluations are compared with. */
export const evalBaselines = sqliteTable(
  "eval_baselines",
  {
    run: text("run").notNull(),
    envId: integer("env_id").notNull(),
    metric: text("metric").notNull(),
    value: real("value").notNull(),
    /** "first" = the first evaluation's value; "api" = set through the API. */
    source: text("source", { enum: ["first", "api"] }).notNull(),
    setAt: integer("set_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.run, t.envId, t.metric] })],
);

/** What happened to a run that someone should know: regressions and the guard's actions. */
export const runEvents = sqliteTable(
  "run_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    run: text("run").notNull(),
    kind: text("kind").notNull(),
    message: text("message").notNull(),
    /** JSON with the event's details. */
    data: text("data").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("run_events_by_run").on(t.run, t.id)],
);

/** A run's registered task types (POST /v1/runs/{run}/tasks, src/core/wire/task-registry.ts). */
export const tasks = sqliteTable(
  "tasks",
  {
    run: text("run").notNull(),
    name: text("name").notNull(),
    difficulty: integer("difficulty"),
    /** JSON string[]. */
    requiredTools: text("required_tools").notNull(),
    description: text("description").notNull(),
    /** The token that registered it (api_tokens.id); null for API_TOKEN and open local dev. */
    tokenId: text("token_id"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.run, t.name] })],
);

/**
 * Which task a group was contributed for (a finished task session), by whom, with its mean score:
 * the tallies per task and per contributor survive the session's expiry and the group's
 * retention, and groups' own rows stay as ingest writes them.
 */
export const taskGroups = sqliteTable(
  "task_groups",
  {
    run: text("run").notNull(),
    groupId: integer("group_id").notNull(),
    task: text("task").notNull(),
    /** api_tokens.id of the token that finished the session; null for API_TOKEN and open dev. */
    tokenId: text("token_id"),
    scoreMean: real("score_mean"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.run, t.groupId] }),
    index("task_groups_by_task").on(t.run, t.task),
  ],
);
