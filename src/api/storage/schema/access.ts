/**
 * Who may call and what they may reach: API tokens, their daily usage, a run's inference servers
 * and the inference proxy's sessions.
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
    /** JSON array of scopes (src/core/wire/tokens.ts). */
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
    /** JSON ProxyTracking (src/core/wire/proxy-session.ts). */
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
