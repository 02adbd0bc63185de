/**
 * Groups and what hangs off them: batches, idempotency keys, the queue counts (maintained by
 * triggers, drizzle/0001_queue_count_triggers.sql, so status endpoints never scan the queue), dead
 * letters, trajectories, payloads held in D1 (payloads.ts) and token texts.
 */
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

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
     * "deflate": the same JSON as one raw-deflate piece (src/core/codecs/gzip-pieces.ts), in
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
    /**
     * When an imported (offline) group joined the replay buffer: it joins once, so a retried
     * import does not bring back a group the buffer trimmed or replayed to its limit since.
     */
    replayAdoptedAt: integer("replay_adopted_at"),
  },
  (t) => [
    index("groups_queue").on(t.run, t.status, t.id),
    index("groups_queue_by_env").on(t.run, t.status, t.envId, t.id),
    index("groups_dedupe").on(t.run, t.dedupeKey),
    index("groups_by_time").on(t.run, t.createdAt),
    // Only groups in a batch: leasing a queued group adds an entry and removes none.
    index("groups_by_batch").on(t.batchId).where(sql`${t.batchId} IS NOT NULL`),
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
    /**
     * 1: whoever inserted the row leases its groups itself, in a later transaction (the lease API
     * answers first; src/api/coordinator-lease.ts); 0: the insert's trigger leases them
     * (drizzle/0022_deferred_lease_groups.sql).
     */
    groupsDeferred: integer("groups_deferred").notNull().default(0),
  },
  (t) => [
    index("batches_by_status").on(t.run, t.status, t.leaseExpiresAt),
    index("batches_by_time").on(t.run, t.createdAt),
  ],
);

/**
 * Never holds a row: inserting `current = 0` aborts the D1 batch it is in (trigger in
 * drizzle/0018_lease_plan_checks.sql). A lease planned from remembered queue state puts this
 * check first in its write, so the write applies only if that state still holds.
 */
export const leasePlanChecks = sqliteTable("lease_plan_checks", {
  current: integer("current", { mode: "boolean" }).notNull(),
});

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

/** Trajectories stored beside their group (one row per sequence of the group). */
export const trajectories = sqliteTable(
  "trajectories",
  {
    run: text("run").notNull(),
    groupId: integer("group_id").notNull(),
    sequence: integer("sequence").notNull(),
    /** JSON Trajectory (src/core/wire/trajectory.ts). */
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
