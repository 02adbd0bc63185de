/**
 * A run as the run list, GET /v1/runs/{run}/stats and the dashboard's charts show it.
 */
import { z } from "zod";

export const runSummarySchema = z.object({
  name: z.string(),
  step: z.number().int(),
  policy_version: z.number().int(),
  batch_size: z.number().int(),
  registered: z.boolean(),
  created_at: z.number(),
});
export type RunSummary = z.infer<typeof runSummarySchema>;

/** An env's liveness as the API sees it (heartbeats), and an env worker's own state. */
export const envLivenessSchema = z.enum(["active", "stale", "disconnected"]);
export const workerStatusSchema = z.enum([
  "running",
  "paused",
  "evaluating",
  "waiting_for_trainer",
  "stopped",
]);
export type WorkerStatus = z.infer<typeof workerStatusSchema>;

export const statsEnvSchema = z.object({
  env_id: z.number().int(),
  name: z.string(),
  desired_name: z.string(),
  group_size: z.number().int(),
  weight: z.number(),
  min_batch_allocation: z.number().nullable(),
  max_token_length: z.number().int(),
  connected: z.boolean(),
  paused: z.boolean().describe("Paused through PATCH /v1/runs/{run}/envs/{id}."),
  status: envLivenessSchema,
  heartbeat_age_s: z.number(),
  groups_submitted: z.number().int(),
  sequences_submitted: z.number().int(),
  mean_score: z.number().nullable(),
  mean_completion_tokens: z.number().nullable(),
  items_in_flight: z.number().int().nullable(),
  items_succeeded: z.number().int().nullable(),
  items_failed: z.number().int().nullable(),
  worker_status: workerStatusSchema.nullable().describe("Set for envs run by an env worker."),
});
export type EnvStats = z.infer<typeof statsEnvSchema>;

export const runStatsSchema = z.object({
  run: z.string(),
  now: z.number(),
  step: z.number().int(),
  policy_version: z.number().int(),
  batch_size: z.number().int(),
  max_token_len: z.number().int(),
  registered: z.boolean(),
  queue: z.object({
    groups: z.number().int(),
    sequences: z.number().int(),
    buffered_groups: z.number().int(),
    buffered_sequences: z.number().int(),
    stale_groups: z
      .number()
      .int()
      .describe(
        "Groups set aside because a lease's max_staleness can no longer accept them (not counted in `groups`).",
      ),
    oldest_queued_at: z.number().nullable(),
    oldest_queued_age_s: z.number().nullable(),
    by_env: z.array(
      z.object({
        env_id: z.number().int().nullable(),
        name: z.string().nullable(),
        groups: z.number().int(),
        sequences: z.number().int(),
      }),
    ),
  }),
  leases: z.object({ outstanding: z.number().int(), expired: z.number().int() }),
  rates: z.object({
    window_s: z.number(),
    ingest_groups_per_s: z.number(),
    ingest_sequences_per_s: z.number(),
    delivered_batches_per_s: z.number(),
    delivered_sequences_per_s: z.number(),
  }),
  batch_formation: z.object({
    samples: z.number().int(),
    last_ms: z.number().nullable(),
    p50_ms: z.number().nullable(),
    p99_ms: z.number().nullable(),
  }),
  envs: z.array(statsEnvSchema),
  dead_letters: z.object({
    count: z.number().int(),
    recent: z.array(
      z.object({
        id: z.number().int(),
        env_id: z.number().int().nullable(),
        error: z.string(),
        created_at: z.number(),
      }),
    ),
  }),
  blocked_reason: z.string().nullable().describe("Why no batch can be formed now, if none can."),
  policy_versions: z.object({
    current: z.number().int(),
    queued_min: z.number().int().nullable(),
    queued_max: z.number().int().nullable(),
  }),
  retention: z.object({
    hours: z
      .number()
      .nullable()
      .describe(
        "RETENTION_HOURS: delivered groups are removed this long after their ack; null keeps them forever.",
      ),
    kept_groups: z.number().int().describe("Groups of the run still stored, in every state."),
    kept_bytes: z.number().int().describe("Their stored payload bytes."),
    delivered_groups: z
      .number()
      .int()
      .describe("Of those, delivered ones (what retention removes)."),
  }),
  by_token: z
    .array(
      z.object({
        token_id: z.string().nullable().describe("null: API_TOKEN or open local development."),
        groups: z.number().int(),
        bytes: z.number().int(),
      }),
    )
    .describe("Stored groups per submitting token (a contributor sees only its own)."),
});
export type RunStats = z.infer<typeof runStatsSchema>;

export const timeseriesSchema = z.object({
  bucket_s: z.number().int(),
  points: z.array(
    z.object({
      t: z.number(),
      ingest_groups: z.number().int(),
      ingest_sequences: z.number().int(),
      delivered_batches: z.number().int(),
      delivered_sequences: z.number().int(),
      mean_score: z.number().nullable(),
    }),
  ),
});
export type TimeSeries = z.infer<typeof timeseriesSchema>;

export const scoreHistogramSchema = z.object({
  step: z
    .number()
    .int()
    .nullable()
    .describe("The step of the env's latest batch, whose scores these are; null before the first."),
  bins: z.array(z.object({ lo: z.number(), hi: z.number(), count: z.number().int() })),
  samples: z.number().int().describe("Sequences of that env in that batch."),
});
export type ScoreHistogram = z.infer<typeof scoreHistogramSchema>;

export const evalListSchema = z.object({
  evals: z.array(
    z.object({
      step: z.number().int(),
      metrics: z.record(z.string(), z.number()),
      created_at: z.number(),
    }),
  ),
});
export type EvalList = z.infer<typeof evalListSchema>;
