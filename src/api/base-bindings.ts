/// <reference path="../worker/worker-configuration.d.ts" />
/**
 * The Worker's bindings as the Durable Objects of the API see them: the Env interface
 * `wrangler types` generates from wrangler.jsonc (src/worker/worker-configuration.d.ts,
 * `npm run types`), with the bindings it cannot type precisely narrowed here, plus the settings
 * that are secrets or optional vars. The RunCoordinator's own namespace is added in bindings.ts,
 * so the objects' modules and the bindings import no ring (type-only imports included).
 */
import type { RolloutItemMessage } from "../core/wire/queue-messages";
import type { EnvFeederPort } from "./env-feeder-port";
import type { EnvSession } from "./env-session";

/**
 * Generated bindings given their exact types: queue message bodies, and Durable Object classes
 * (the entry exports them from the factory, which `wrangler types` cannot resolve as types).
 */
interface TypedBindings {
  ROLLOUT_ITEMS: Queue<RolloutItemMessage>;
  ROLLOUT_DLQ: Queue<RolloutItemMessage>;
  ENV_SESSION: DurableObjectNamespace<EnvSession>;
  ENV_FEEDER: DurableObjectNamespace<EnvFeederPort>;
}

/** Settings that are not in wrangler.jsonc: a secret and vars a deployment may add. */
interface OptionalSettings {
  /** `wrangler secret put API_TOKEN`. */
  API_TOKEN?: string;
  CORS_ORIGINS?: string;
  /** Memory (MiB) that whole-group work (ingest parsing, delivery) may hold at once per isolate. */
  MEMORY_BUDGET_MB?: string;
  /** A request body that sends nothing for this many ms is answered 408 (default 30000). */
  BODY_IDLE_TIMEOUT_MS?: string;
  /** Most groups one /scored_data_list (or replay import) may carry; more get 413 (default 1024). */
  MAX_LIST_GROUPS?: string;
  /** Most bytes (on the wire and inflated) of a JSON body that is not a submission (default 4 MiB). */
  MAX_JSON_BODY_BYTES?: string;
  /** How often an env worker's feeder ticks, in ms (default 500). */
  FEEDER_TICK_MS?: string;
  /** Encrypts the API keys of runs' inference servers at rest (`wrangler secret put`). */
  INFERENCE_KEYS_SECRET?: string;
  /** Inference-proxy sessions expire this many seconds after their last call (default 3600). */
  PROXY_SESSION_TTL_S?: string;
  /**
   * "true" lets the regression guard's webhook_url point at loopback, private or link-local
   * addresses (refused otherwise: a trainer must not make the server POST into its network).
   */
  GUARD_WEBHOOK_ALLOW_PRIVATE?: string;
  /** Base URL env workers use to reach this API (defaults to the request origin). */
  PUBLIC_API_URL?: string;
  /**
   * A sandbox service (a service binding to a Worker built with `createSandboxService`) that env
   * workers run untrusted code in; envs without code execution do not need it.
   */
  SANDBOX?: Fetcher;
}

/** Fails to compile when wrangler.jsonc no longer declares a binding narrowed here or in bindings.ts. */
type Declared<K extends keyof WorkerEnv> = K;
type Narrowed = Declared<keyof TypedBindings | "RUN_COORDINATOR">;

export type BaseBindings = Omit<WorkerEnv, Narrowed> & TypedBindings & OptionalSettings;
