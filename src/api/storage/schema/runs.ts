/**
 * A run, its replay buffer settings, its envs and the env workers started for it.
 */
import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

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
  /**
   * Drawn anew by the run's coordinator each time it starts answering empty leases from memory
   * (the queue held no group then); ingest reads it to tell the coordinator about a queued group only
   * while such an answer may be kept (src/api/storage/empty-epoch.ts).
   */
  emptyEpoch: integer("empty_epoch").notNull().default(0),
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
