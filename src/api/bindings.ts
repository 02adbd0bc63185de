import type { RolloutItemMessage } from "../queues/messages";
import type { EnvFeeder } from "../worker/env-feeder";
import type { EnvSession } from "./env-session";
import type { RunCoordinator } from "./run-coordinator";

/** Worker bindings and vars (wrangler.jsonc). */
export interface Bindings {
  DB: D1Database;
  PAYLOADS: R2Bucket;
  ASSETS?: Fetcher;
  ROLLOUT_ITEMS: Queue<RolloutItemMessage>;
  ROLLOUT_DLQ: Queue<RolloutItemMessage>;
  RUN_COORDINATOR: DurableObjectNamespace<RunCoordinator>;
  ENV_SESSION: DurableObjectNamespace<EnvSession>;
  ENV_FEEDER: DurableObjectNamespace<EnvFeeder>;
  API_TOKEN?: string;
  DEPLOYMENT?: string;
  ALLOW_UNAUTHENTICATED?: string;
  CORS_ORIGINS?: string;
  COMPAT_LEASE_SECONDS?: string;
  DEFAULT_LEASE_SECONDS?: string;
  MAX_BODY_BYTES?: string;
  MAX_INFLATED_BYTES?: string;
  ENV_STALE_SECONDS?: string;
  DEDUPE_WINDOW_SECONDS?: string;
  /** Memory (MiB) that whole-group work (ingest parsing, delivery) may hold at once per isolate. */
  MEMORY_BUDGET_MB?: string;
  /** How often an env worker's feeder ticks, in ms (default 500). */
  FEEDER_TICK_MS?: string;
  /**
   * Hours after their batch is acked that delivered groups and their payloads are removed
   * (src/api/retention.ts); unset or 0 keeps them forever.
   */
  RETENTION_HOURS?: string;
  /** Base URL env workers use to reach this API (defaults to the request origin). */
  PUBLIC_API_URL?: string;
}

export function numberVar(value: string | undefined, fallback: number): number {
  const n = value === undefined ? Number.NaN : Number(value);
  return Number.isFinite(n) ? n : fallback;
}
