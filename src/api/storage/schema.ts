/**
 * D1 schema: the system of record for run, env, group, batch and lease metadata.
 * Group payload bytes live in R2, or inline in their row when small (see payloads.ts); `queue_counts` is maintained by triggers
 * (drizzle/0001_queue_count_triggers.sql) so status endpoints never scan the queue.
 */
import {
  index,
  integer,
  primaryKey,
  real,
  sqliteTable,
  text,
  uniqueIndex,
} from "drizzle-orm/sqlite-core";

export const runs = sqliteTable("runs", {
  name: text("name").primaryKey(),
  batchSize: integer("batch_size").notNull().default(-1),
  maxTokenLen: integer("max_token_len").notNull().default(-1),
  wandbGroup: text("wandb_group"),
  wandbProject: text("wandb_project"),
  checkpointDir: text("checkpoint_dir"),
  saveCheckpointInterval: integer("save_checkpoint_interval").notNull().default(-1),
  numSteps: integer("num_steps").notNull().default(-1),
  step: integer("step").notNull().default(0),
  policyVersion: integer("policy_version").notNull().default(0),
  registered: integer("registered", { mode: "boolean" }).notNull().default(false),
  started: integer("started", { mode: "boolean" }).notNull().default(false),
  /** Replay buffer and mixing (off by default; PUT /v1/runs/{run}/replay). */
  replayEnabled: integer("replay_enabled", { mode: "boolean" }).notNull().default(false),
  /** Delivered groups with a mean score at or above this are kept for replay. */
  replayThreshold: real("replay_threshold").notNull().default(0.7),
  /** Groups the buffer holds at most (the lowest priorities leave first). */
  replayCapacity: integer("replay_capacity").notNull().default(1024),
  /** Times one group may be replayed. */
  replayMaxReplays: integer("replay_max_replays").notNull().default(1),
  /** Fraction of each batch's sequences taken from the buffer (within one group). */
  replayFraction: real("replay_fraction").notNull().default(0.3),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * The replay buffer: delivered groups kept for replay, highest priority (mean score) first. A
 * group here is not collected by retention.
 */
export const replayGroups = sqliteTable(
  "replay_groups",
  {
    run: text("run").notNull(),
    groupId: integer("group_id").notNull(),
    priority: real("priority").notNull(),
    replays: integer("replays").notNull().default(0),
    addedAt: integer("added_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.run, t.groupId] }),
    index("replay_by_priority").on(t.run, t.priority),
  ],
);

export const envs = sqliteTable(
  "envs",
  {
    run: text("run").notNull(),
    envId: integer("env_id").notNull(),
    desiredName: text("desired_name").notNull(),
    realName: text("real_name").notNull(),
    envKey: text("env_key"),
    maxTokenLength: integer("max_token_length").notNull(),
    weight: real("weight").notNull(),
    groupSize: integer("group_size").notNull(),
    minBatchAllocation: real("min_batch_allocation"),
    /** Set through PATCH /v1/runs/{run}/envs/{id}: a paused env gets no quota in /status-env. */
    paused: integer("paused", { mode: "boolean" }).notNull().default(false),
    /** Set by PATCH: the env registering again (a restart) keeps the operator's value. */
    weightPinned: integer("weight_pinned", { mode: "boolean" }).notNull().default(false),
    minBatchAllocationPinned: integer("min_batch_allocation_pinned", { mode: "boolean" })
      .notNull()
      .default(false),
    connected: integer("connected", { mode: "boolean" }).notNull().default(true),
    registeredAt: integer("registered_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.run, t.envId] }), index("envs_by_key").on(t.run, t.envKey)],
);

export const groups = sqliteTable(
  "groups",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    run: text("run").notNull(),
    envId: integer("env_id"),
    /**
     * buffered → queued → leased → delivered; queued → stale when it can no longer be delivered
     * within a lease's max_staleness (kept, out of the queue counts; a policy reset requeues it).
     */
    status: text("status", {
      enum: ["buffered", "queued", "leased", "delivered", "stale"],
    }).notNull(),
    numSeqs: integer("num_seqs").notNull(),
    totalTokens: integer("total_tokens").notNull(),
    completionTokens: integer("completion_tokens").notNull(),
    scoreMean: real("score_mean"),
    scoreMin: real("score_min"),
    scoreMax: real("score_max"),
    scoresJson: text("scores_json").notNull(),
    policyVersion: integer("policy_version").notNull(),
    /** The R2 object holding the payload; "" when the payload is inline. */
    payloadKey: text("payload_key").notNull(),
    /**
     * "canonical": the served JSON, stored once at ingest and sent as stored (in group_payloads).
     * "deflate": the same JSON as one raw-deflate piece (src/core/gzip-pieces.ts), in
     * group_payloads (base64) or R2: sent to gzip clients without compressing again. "identity" and
     * "gzip": the JSON as an env sent it (rows stored before canonical storage), canonicalised
     * when served.
     */
    payloadEncoding: text("payload_encoding", {
      enum: ["canonical", "deflate", "identity", "gzip"],
    }).notNull(),
    payloadBytes: integer("payload_bytes").notNull(),
    /** "deflate": the JSON's length and CRC-32 (what the stored piece inflates to). */
    rawBytes: integer("raw_bytes"),
    rawCrc32: integer("raw_crc32"),
    /** Byte offset in the R2 object: concurrent submissions share one object (group commit). */
    payloadOffset: integer("payload_offset").notNull().default(0),
    /**
     * Names the submission this group came from and its position in it (Idempotency-Key, else the
     * request body's SHA-256): a retry carries the same key, so it is recognised within the
     * dedupe window, while identical groups of one request have different keys (ingest.ts).
     */
    dedupeKey: text("dedupe_key"),
    batchId: text("batch_id"),
    createdAt: integer("created_at").notNull(),
    queuedAt: integer("queued_at"),
    /** The API token that submitted it (api_tokens.id); null for API_TOKEN and open local dev. */
    tokenId: text("token_id"),
  },
  (t) => [
    index("groups_queue").on(t.run, t.status, t.id),
    index("groups_queue_by_env").on(t.run, t.status, t.envId, t.id),
    index("groups_dedupe").on(t.run, t.dedupeKey),
    index("groups_by_time").on(t.run, t.createdAt),
    index("groups_by_batch").on(t.batchId),
    index("groups_by_payload").on(t.payloadKey),
  ],
);

export const batches = sqliteTable(
  "batches",
  {
    id: text("id").primaryKey(),
    run: text("run").notNull(),
    step: integer("step").notNull(),
    status: text("status", { enum: ["leased", "acked"] }).notNull(),
    /** "compat" = served by GET /batch, "lease" = POST /v1/.../batches/lease */
    consumer: text("consumer", { enum: ["compat", "lease"] }).notNull(),
    leaseId: text("lease_id").notNull(),
    leaseCount: integer("lease_count").notNull().default(1),
    leaseExpiresAt: integer("lease_expires_at").notNull(),
    maxStaleness: integer("max_staleness"),
    policyVersion: integer("policy_version").notNull(),
    numGroups: integer("num_groups").notNull(),
    numSeqs: integer("num_seqs").notNull(),
    groupIds: text("group_ids").notNull(),
    /** JSON array of the replayed groups among group_ids (null when none). */
    replayIds: text("replay_ids"),
    replaySeqs: integer("replay_seqs").notNull().default(0),
    formationMs: real("formation_ms"),
    createdAt: integer("created_at").notNull(),
    ackedAt: integer("acked_at"),
    /** The token that took the current lease (null: API_TOKEN or open local development). */
    holder: text("holder"),
    /**
     * JSON array of the lease ids the batch had before its current one (leases that lapsed and
     * were handed out again), so an ack with one of them is told what happened. Once acked,
     * `lease_id` is the lease that completed the batch.
     */
    priorLeaseIds: text("prior_lease_ids"),
  },
  (t) => [
    index("batches_by_status").on(t.run, t.status, t.leaseExpiresAt),
    index("batches_by_time").on(t.run, t.createdAt),
  ],
);

export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    run: text("run").notNull(),
    key: text("key").notNull(),
    route: text("route").notNull(),
    requestHash: text("request_hash").notNull(),
    statusCode: integer("status_code").notNull(),
    response: text("response").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.run, t.key] })],
);

/** Per (run, env, group size, status) counts of waiting groups; written only by triggers. */
export const queueCounts = sqliteTable(
  "queue_counts",
  {
    run: text("run").notNull(),
    /** -1 for groups submitted without an env_id */
    envId: integer("env_id").notNull(),
    size: integer("size").notNull(),
    status: text("status", { enum: ["buffered", "queued"] }).notNull(),
    n: integer("n").notNull(),
  },
  (t) => [primaryKey({ columns: [t.run, t.envId, t.size, t.status] })],
);

export const deadLetters = sqliteTable(
  "dead_letters",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    run: text("run").notNull(),
    envName: text("env_name").notNull(),
    envId: integer("env_id"),
    item: text("item").notNull(),
    error: text("error").notNull(),
    attempts: integer("attempts").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("dead_letters_by_run").on(t.run, t.createdAt)],
);

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

/** Counters reported by env workers (feeder DO and queue consumers) for the dashboard. */
export const workerStats = sqliteTable(
  "worker_stats",
  {
    run: text("run").notNull(),
    envId: integer("env_id").notNull(),
    envName: text("env_name").notNull(),
    itemsInFlight: integer("items_in_flight").notNull().default(0),
    itemsSucceeded: integer("items_succeeded").notNull().default(0),
    itemsFailed: integer("items_failed").notNull().default(0),
    /** The feeder's own state: running, paused, evaluating, waiting_for_trainer or stopped. */
    workerStatus: text("worker_status"),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.run, t.envId] })],
);

/** Env workers (EnvFeeder Durable Objects) started for a run, so a reset can find and clear them. */
export const envWorkers = sqliteTable(
  "env_workers",
  {
    run: text("run").notNull(),
    /** The feeder's Durable Object name: {run}/{env}/{instance}. */
    name: text("name").notNull(),
    envName: text("env_name").notNull(),
    startedAt: integer("started_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.run, t.name] })],
);

/**
 * API tokens besides API_TOKEN. Not run data: a reset leaves them alone. Only the SHA-256 of the
 * secret is stored; `bound_run` restricts the token to one run.
 */
export const apiTokens = sqliteTable(
  "api_tokens",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    secretHash: text("secret_hash").notNull(),
    /** JSON array of scopes (src/core/tokens.ts). */
    scopes: text("scopes").notNull(),
    boundRun: text("bound_run"),
    rpsLimit: real("rps_limit"),
    bytesPerDay: integer("bytes_per_day"),
    /** Prompt + completion tokens through the inference proxy per UTC day. */
    proxyTokensPerDay: integer("proxy_tokens_per_day"),
    createdAt: integer("created_at").notNull(),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("api_tokens_by_hash").on(t.secretHash)],
);

/** Submitted body bytes per token per UTC day (the bytes_per_day quota). Not run data. */
export const tokenUsage = sqliteTable(
  "token_usage",
  {
    tokenId: text("token_id").notNull(),
    /** UTC day, YYYY-MM-DD. */
    day: text("day").notNull(),
    bytes: integer("bytes").notNull().default(0),
    /** Prompt + completion tokens through the inference proxy (the proxy_tokens_per_day quota). */
    proxyTokens: integer("proxy_tokens").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.tokenId, t.day] })],
);

/**
 * A run's inference servers (PUT /v1/runs/{run}/inference), as the env-worker start route takes
 * them. API keys are stored apart from the servers, AES-GCM encrypted when the Worker has the
 * INFERENCE_KEYS_SECRET secret, and never returned.
 */
export const runInference = sqliteTable("run_inference", {
  run: text("run").primaryKey(),
  /** JSON list of server configs with api_key removed. */
  servers: text("servers").notNull(),
  /** JSON list of the servers' keys (null where none), sealed by storage/inference.ts. */
  apiKeys: text("api_keys").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/** Inference-proxy sessions: their tracked sequences, until they expire or are finished. */
export const proxySessions = sqliteTable(
  "proxy_sessions",
  {
    run: text("run").notNull(),
    id: text("id").notNull(),
    /** "open" or "finished". */
    status: text("status").notNull(),
    /** JSON ProxyTracking (src/core/proxy-session.ts). */
    tracking: text("tracking").notNull(),
    /** Bumped on every write: concurrent calls on one session are refused, not merged. */
    version: integer("version").notNull(),
    createdAt: integer("created_at").notNull(),
    lastUsedAt: integer("last_used_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    groupId: integer("group_id"),
    /**
     * The token that created the session; only it (and admin) can use it. Null: created by
     * API_TOKEN or open local development (or before owners were recorded): admin only.
     */
    owner: text("owner"),
    /** The registered task it was opened for (POST …/proxy/{session}/open); null otherwise. */
    task: text("task"),
  },
  (t) => [primaryKey({ columns: [t.run, t.id] }), index("proxy_sessions_expiry").on(t.expiresAt)],
);

/** Trajectories stored beside their group (one row per sequence of the group). */
export const trajectories = sqliteTable(
  "trajectories",
  {
    run: text("run").notNull(),
    groupId: integer("group_id").notNull(),
    sequence: integer("sequence").notNull(),
    /** JSON Trajectory (src/core/trajectory.ts). */
    body: text("body").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.run, t.groupId, t.sequence] })],
);

/**
 * Each token's text per sequence, as the env sent it with a group (display only: the dashboard's
 * rollout view). Kept beside the group so its stored canonical bytes stay what a batch serves.
 */
/**
 * A group's payload when it is kept in D1 (src/api/storage/payloads.ts: the JSON, or its
 * compressed piece in base64), beside its row rather than in it: a lease and an ack change the
 * row's status, and SQLite rewrites a whole row, so a payload kept in the row would be written
 * again twice per batch. Written once at ingest, in the same transaction.
 */
export const groupPayloads = sqliteTable("group_payloads", {
  groupId: integer("group_id").primaryKey(),
  run: text("run").notNull(),
  body: text("body").notNull(),
});

export const groupTokenTexts = sqliteTable(
  "group_token_texts",
  {
    run: text("run").notNull(),
    groupId: integer("group_id").notNull(),
    /** JSON string[][]: per sequence, per token. */
    body: text("body").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.run, t.groupId] })],
);

/** The run's regression guard (absent: on, factor 0.95, alert only, no webhook). */
export const regressionGuards = sqliteTable("regression_guards", {
  run: text("run").primaryKey(),
  enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
  factor: real("factor").notNull().default(0.95),
  /** JSON string[]: metrics where smaller is better. */
  lowerIsBetter: text("lower_is_better").notNull().default("[]"),
  /** JSON of a GuardAction (src/core/regression-guard.ts). */
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

/** A run's registered task types (POST /v1/runs/{run}/tasks, src/core/task-registry.ts). */
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
