/**
 * Response shapes of the rollout API. The routes declare them (so /openapi.json documents them)
 * and the trainer client takes its types from them, so the server and its clients share one
 * definition of stats, group listings and batch manifests.
 */
import { z } from "zod";
import { sequenceNodeSchema } from "./proxy-session";
import { guardActionSchema } from "./regression-guard";
import { APIServerConfigSchema } from "./server-config";

export const errorCodeSchema = z.enum([
  "BAD_REQUEST",
  "INVALID_GZIP",
  "VALIDATION_FAILED",
  "UNAUTHORIZED",
  "FORBIDDEN",
  "NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "CONFLICT",
  "PAYLOAD_TOO_LARGE",
  "REQUEST_TIMEOUT",
  "CLIENT_CLOSED",
  "UNSUPPORTED_MEDIA_TYPE",
  "TOO_MANY_REQUESTS",
  "UNAVAILABLE",
  "INTERNAL",
]);
export type ErrorCode = z.infer<typeof errorCodeSchema>;

/** One FastAPI/pydantic-style 422 `detail` entry. */
export const validationDetailSchema = z.object({
  type: z.string(),
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  input: z.unknown().optional(),
});
export type ValidationDetail = z.infer<typeof validationDetailSchema>;

export const errorBodySchema = z
  .object({
    detail: z
      .union([z.string(), z.array(validationDetailSchema)])
      .describe("FastAPI's `detail`: the message, or for a 422 the list of invalid fields."),
    error: z.object({
      code: errorCodeSchema,
      message: z.string().describe("What went wrong and what to change."),
      request_id: z.string(),
    }),
  })
  .meta({ id: "Error" });
export type ErrorBody = z.infer<typeof errorBodySchema>;

/** Per group of a leased batch, in batch order: what staleness and bookkeeping need. */
export const manifestEntrySchema = z.object({
  group_id: z.number().int(),
  env_id: z.number().int().nullable(),
  policy_version: z.number().int().describe("The policy version the group was sampled under."),
  num_seqs: z.number().int(),
  replayed: z
    .boolean()
    .describe(
      "Taken from the run's replay buffer (delivered before); online groups are delivered once.",
    ),
});
export type ManifestEntry = z.infer<typeof manifestEntrySchema>;

/** A delivered group: Atropos' ScoredData keys, env_id stamped by the API. */
export const deliveredGroupSchema = z.record(z.string(), z.unknown()).meta({ id: "Group" });

export const leaseResponseSchema = z.object({
  batch_id: z.string(),
  lease_id: z.string(),
  step: z.number().int(),
  lease_expires_at: z.number(),
  redelivered: z.boolean(),
  groups: z.array(manifestEntrySchema),
  batch: z.array(deliveredGroupSchema),
});

export const ackResponseSchema = z.object({
  batch_id: z.string(),
  status: z.literal("acked"),
  already_acked: z.boolean(),
  step: z.number().int(),
});

export const policyResponseSchema = z.object({ policy_version: z.number().int() });

export const runSummarySchema = z.object({
  name: z.string(),
  step: z.number().int(),
  policy_version: z.number().int(),
  batch_size: z.number().int(),
  registered: z.boolean(),
  created_at: z.number(),
});
export type RunSummary = z.infer<typeof runSummarySchema>;

/** A row of the group browser (GET /v1/runs/{run}/groups). */
export const groupRowSchema = z.object({
  id: z.number().int(),
  env_id: z.number().int().nullable(),
  env_name: z.string().nullable(),
  status: z.enum(["buffered", "queued", "leased", "delivered", "stale"]),
  num_seqs: z.number().int(),
  total_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  score_mean: z.number(),
  score_min: z.number(),
  score_max: z.number(),
  policy_version: z.number().int(),
  created_at: z.number(),
  batch_id: z.string().nullable(),
  step: z.number().int().nullable(),
  token_id: z
    .string()
    .nullable()
    .describe("The API token that submitted the group (null: API_TOKEN or open local dev)."),
});
export type GroupRow = z.infer<typeof groupRowSchema>;

export const groupPageSchema = z.object({
  groups: z.array(groupRowSchema),
  next_cursor: z.number().int().nullable(),
});
export type GroupPage = z.infer<typeof groupPageSchema>;

export const groupDetailSchema = z.object({
  group: groupRowSchema,
  payload: deliveredGroupSchema,
  token_texts: z
    .array(z.array(z.string()))
    .nullable()
    .describe("Each token's text per sequence, when the env sent it (include_token_texts)."),
});
export type GroupDetail = z.infer<typeof groupDetailSchema>;

export const batchRowSchema = z.object({
  batch_id: z.string(),
  step: z.number().int(),
  status: z.enum(["leased", "acked"]),
  num_groups: z.number().int(),
  num_seqs: z.number().int(),
  created_at: z.number(),
  lease_expires_at: z.number().nullable(),
  acked_at: z.number().nullable(),
  max_staleness: z.number().int().nullable(),
  policy_version_at_formation: z.number().int().nullable(),
  replayed_groups: z
    .number()
    .int()
    .describe("Groups of this batch taken from the replay buffer (delivered before)."),
  groups: z.array(
    z.object({
      id: z.number().int(),
      env_id: z.number().int().nullable(),
      policy_version: z.number().int().nullable(),
      num_seqs: z.number().int().nullable(),
      replayed: z
        .boolean()
        .describe("Taken from the run's replay buffer; false for an online group."),
    }),
  ),
});

export type BatchRow = z.infer<typeof batchRowSchema>;

export const batchPageSchema = z.object({
  batches: z.array(batchRowSchema),
  next_cursor: z.number().int().nullable(),
});
export type BatchPage = z.infer<typeof batchPageSchema>;

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

export const checkpointSchema = z.object({
  step: z.number().int(),
  state: z.record(z.string(), z.unknown()),
  saved_at: z.number(),
});

/** An env worker as its feeder describes it. */
export const envWorkerSchema = z
  .object({
    run: z.string(),
    name: z.string(),
    env: z.string(),
    env_id: z.number().int().nullable(),
    status: z.string(),
  })
  .catchall(z.unknown());

export const statusEnvSchema = z.object({
  current_step: z.number().int(),
  queue_size: z.number().int(),
  unallocated_fraction: z.number(),
  self_queue_size: z.number().int(),
  max_group_size: z.number().int(),
  env_weight: z.number(),
  policy_version: z
    .number()
    .int()
    .describe(
      "The run's policy version now: an env stamps it on the groups it starts sampling (not in Atropos).",
    ),
});
/** The answer of GET /status-env. */
export type StatusEnv = z.infer<typeof statusEnvSchema>;

export const registerEnvResponseSchema = z.object({
  status: z.string(),
  env_id: z.number().int().optional(),
  wandb_name: z.string().optional(),
  checkpoint_dir: z.string().optional(),
  starting_step: z.number().int().optional(),
  checkpoint_interval: z.number().int().optional(),
  num_steps: z.number().int().optional(),
  resumed: z.boolean().optional(),
});
/** The answer of POST /register-env (`status` other than "success": the trainer has not started). */
export type RegisterEnvAnswer = z.infer<typeof registerEnvResponseSchema>;

export const metricKindSchema = z
  .enum(["train", "env", "eval"])
  .describe(
    "train: computed by the API for each batch; env: reported by an env (observe()/metrics(), drop counts, curriculum); eval: evaluation results.",
  );
export type MetricKind = z.infer<typeof metricKindSchema>;

const metricNameSchema = z
  .string()
  .min(1)
  .max(200)
  .describe("Metric name, e.g. `train/score_mean`, `drops/too long`, `curriculum/level`.");

export const metricsReportSchema = z.object({
  step: z.number().int().min(0).describe("The run step the values belong to."),
  kind: z
    .enum(["env", "eval"])
    .default("env")
    .describe("env (default): training-time values; eval: evaluation results."),
  policy_version: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Policy version the values were produced with (default: the run's current one)."),
  metrics: z
    .record(metricNameSchema, z.number())
    .refine((m) => Object.keys(m).length <= 1000, "at most 1000 metrics per report"),
});
export type MetricsReport = z.infer<typeof metricsReportSchema>;

export const metricSeriesSchema = z.object({
  name: z.string(),
  env_id: z.number().int().nullable().describe("null: a run-wide value."),
  kind: metricKindSchema,
  steps: z.array(z.number().int()),
  values: z.array(z.number()),
  policy_versions: z.array(z.number().int().nullable()),
});
export type MetricSeries = z.infer<typeof metricSeriesSchema>;

export const metricsResponseSchema = z.object({
  series: z.array(metricSeriesSchema).describe("One per (name, env, kind), steps ascending."),
  truncated: z.boolean().describe("More values matched than `limit`; narrow the filter."),
});
export type MetricsResponse = z.infer<typeof metricsResponseSchema>;

export const metricsReportResponseSchema = z.object({
  status: z.literal("stored"),
  step: z.number().int(),
  stored: z.number().int().describe("Values stored (non-finite ones are skipped)."),
});

/** A run's inference server as GET /v1/runs/{run}/inference shows it: never its key. */
export const redactedServerSchema = APIServerConfigSchema.extend({
  api_key: z.null().describe("Never returned; see has_api_key."),
  has_api_key: z.boolean(),
});

export const runInferenceRequestSchema = z
  .array(APIServerConfigSchema)
  .min(1, "give at least one inference server")
  .describe("The run's inference servers, in the shape POST /v1/runs/{run}/env-workers takes.");

export const runInferenceSchema = z.object({
  run: z.string(),
  servers: z.array(redactedServerSchema),
  updated_at: z.number().int().nullable(),
});
export type RunInference = z.infer<typeof runInferenceSchema>;

/** An OpenAI request or answer, forwarded as is (the proxy checks the fields it uses). */
export const openAiRequestSchema = z
  .record(z.string(), z.unknown())
  .describe("An OpenAI chat or text completion request (stream: false).");
export const openAiResponseSchema = z
  .record(z.string(), z.unknown())
  .describe("The OpenAI answer (chat.completion or text_completion).");

export const proxySessionStateSchema = z.object({
  run: z.string(),
  session: z.string(),
  status: z.enum(["open", "finished"]),
  created_at: z.number().int(),
  expires_at: z.number().int(),
  group_id: z.number().int().nullable(),
  nodes: z.array(sequenceNodeSchema),
});
export type ProxySessionState = z.infer<typeof proxySessionStateSchema>;

export const finishSessionResponseSchema = z.object({
  session: z.string(),
  group_id: z.number().int(),
  status: z.enum(["received", "buffered", "duplicate"]),
  sequences: z.number().int(),
});

/** Atropos' proxy wire: POST /sessions/create (both fields accepted; a run has its own servers). */
export const atroposSessionCreateSchema = z
  .object({ base_url: z.string().optional(), tool_parser: z.string().optional() })
  .catchall(z.unknown());
export const atroposSessionCreatedSchema = z.object({
  uuid: z.string(),
  /** The session's OpenAI base URL (relative to the API origin). */
  url: z.string(),
});
export const atroposNodesSchema = z.object({ nodes: z.array(sequenceNodeSchema) });
export const atroposSessionDeletedSchema = z.object({
  status: z.literal("deleted"),
  uuid: z.string(),
});
/** PATCH /v1/runs/{run}/envs/{id}: the run's mix, changed while it goes. */
export const envControlRequestSchema = z
  .object({
    weight: z
      .number()
      .positive("weight must be above 0 (pause the env to stop it)")
      .max(1e6)
      .optional()
      .describe("The env's weight in /status-env's env_weight."),
    min_batch_allocation: z
      .number()
      .min(0)
      .max(1)
      .nullable()
      .optional()
      .describe("Fraction of every batch reserved for this env; null removes the reservation."),
    paused: z
      .boolean()
      .optional()
      .describe(
        "Paused: /status-env reports a zero quota (env_weight 0, unallocated_fraction -1, self_queue_size 2^31-1), env workers issue nothing, and its allocation is not reserved. Its queued groups are still delivered.",
      ),
  })
  .strict()
  .refine(
    (b) => b.weight !== undefined || b.min_batch_allocation !== undefined || b.paused !== undefined,
    { message: "send at least one of weight, min_batch_allocation, paused" },
  );
export type EnvControlRequest = z.infer<typeof envControlRequestSchema>;

export const envControlSchema = z.object({
  env_id: z.number().int(),
  name: z.string(),
  weight: z.number(),
  min_batch_allocation: z.number().nullable(),
  paused: z.boolean(),
});
export type EnvControl = z.infer<typeof envControlSchema>;

/** The run's replay buffer settings (GET/PUT /v1/runs/{run}/replay). */
export const replayConfigSchema = z.object({
  enabled: z.boolean(),
  threshold: z
    .number()
    .describe("Delivered groups with a mean score at or above this are kept for replay."),
  capacity: z.number().int().describe("Groups kept at most; the lowest priorities leave first."),
  max_replays: z.number().int().describe("Times one group may be replayed."),
  fraction: z
    .number()
    .describe("Fraction of each batch's sequences taken from the buffer, within one group."),
});
export type ReplayConfig = z.infer<typeof replayConfigSchema>;

export const replayConfigRequestSchema = z
  .object({
    enabled: z.boolean().optional(),
    threshold: z.number().finite().optional(),
    capacity: z.number().int().min(0).max(1_000_000).optional(),
    max_replays: z.number().int().min(1).max(1000).optional(),
    fraction: z
      .number()
      .min(0)
      .max(0.9, "fraction must be at most 0.9: a batch keeps some online data")
      .optional(),
  })
  .strict();
export type ReplayConfigRequest = z.infer<typeof replayConfigRequestSchema>;

export const replayStatusSchema = replayConfigSchema.extend({
  buffered_groups: z.number().int().describe("Groups in the buffer now."),
  replays_left: z.number().int().describe("Replays the buffer can still give."),
  replayed_sequences: z.number().int().describe("Replayed sequences in batches formed so far."),
});
export type ReplayStatus = z.infer<typeof replayStatusSchema>;

/** The run's regression guard (GET/PUT /v1/runs/{run}/guard). */
export const guardConfigSchema = z.object({
  enabled: z.boolean(),
  factor: z.number().describe("An evaluation below factor × baseline is a regression."),
  lower_is_better: z
    .array(z.string())
    .describe(
      "Metrics where smaller is better (losses, error rates; a trailing * names a prefix): above baseline ÷ factor is a regression.",
    ),
  action: guardActionSchema,
  webhook_url: z.string().nullable().describe("POSTed a JSON event on each regression."),
});
export type GuardConfig = z.infer<typeof guardConfigSchema>;

export const guardConfigRequestSchema = z
  .object({
    enabled: z.boolean().optional(),
    factor: z.number().gt(0).max(1, "factor must be at most 1").optional(),
    lower_is_better: z
      .array(z.string().min(1).max(200))
      .max(100)
      .optional()
      .describe("Replaces the list of lower-is-better metrics."),
    action: guardActionSchema.optional(),
    webhook_url: z
      .string()
      .url()
      .refine((u) => /^https?:\/\//.test(u), "webhook_url must be http(s)")
      .nullable()
      .optional(),
  })
  .strict();
export type GuardConfigRequest = z.infer<typeof guardConfigRequestSchema>;

export const baselineSchema = z.object({
  env_id: z.number().int().min(0),
  metric: z.string().min(1).max(200),
  value: z.number().finite(),
});

export const guardStatusSchema = guardConfigSchema.extend({
  baselines: z.array(
    baselineSchema.extend({ source: z.enum(["first", "api"]), set_at: z.number() }),
  ),
});
export type GuardStatus = z.infer<typeof guardStatusSchema>;

export const setBaselinesRequestSchema = z.object({
  baselines: z.array(baselineSchema).min(1).max(1000),
});

export const runEventSchema = z.object({
  id: z.number().int(),
  kind: z.string().describe("regression (more kinds may come)"),
  message: z.string(),
  data: z.record(z.string(), z.unknown()),
  created_at: z.number(),
});
export type RunEvent = z.infer<typeof runEventSchema>;

export const runEventListSchema = z.object({ events: z.array(runEventSchema) });
export type RunEventList = z.infer<typeof runEventListSchema>;
