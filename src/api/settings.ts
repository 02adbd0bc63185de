/**
 * The Worker's settings: every var the API reads, with its default, in one schema, read once per
 * bindings object. A numeric var that is unset or not a finite number takes its default.
 * These defaults are the only ones: wrangler.jsonc (and the project template's) may repeat a var
 * only with exactly its default here (test/unit/api/settings.test.ts fails when they drift).
 */
import { z } from "zod";
import type { BaseBindings } from "./base-bindings";

/** A numeric var: unset, or not a finite number, gives `fallback`. */
function numeric(fallback: number) {
  return z
    .string()
    .optional()
    .transform((value) => {
      const n = value === undefined ? Number.NaN : Number(value);
      return Number.isFinite(n) ? n : fallback;
    });
}

export const settingsSchema = z.object({
  /** A request body over this many bytes is refused (413). */
  MAX_BODY_BYTES: numeric(200 * 1024 * 1024),
  /** A gzip body inflating past this many bytes is refused (413). */
  MAX_INFLATED_BYTES: numeric(256 * 1024 * 1024),
  /**
   * The most a JSON body of a route other than the submissions (tasks, proxy calls, metrics,
   * registrations, tokens, ...) may hold, on the wire and inflated. Those bodies are parsed whole
   * outside the memory budget, so a gzip bomb to them must stop inflating early; 4 MiB leaves
   * room for a long proxied conversation.
   */
  MAX_JSON_BODY_BYTES: numeric(4 * 1024 * 1024),
  /** A request body that sends nothing for this many ms is answered 408. */
  BODY_IDLE_TIMEOUT_MS: numeric(30_000),
  /** Most groups one /scored_data_list (or replay import) may carry; more get 413. */
  MAX_LIST_GROUPS: numeric(1024),
  /** Memory (MiB) that whole-group work may hold at once per isolate. */
  MEMORY_BUDGET_MB: numeric(8),
  /** A resent submission within this many seconds is a retry of the stored one. */
  DEDUPE_WINDOW_SECONDS: numeric(120),
  /** An env without a heartbeat for this long is stale. */
  ENV_STALE_SECONDS: numeric(120),
  /** Lease of a batch taken through the Atropos GET /batch. */
  COMPAT_LEASE_SECONDS: numeric(3600),
  /** Lease of a v1 batch when the trainer names none. */
  DEFAULT_LEASE_SECONDS: numeric(300),
  /** Delivered groups are removed this long after their ack; 0 keeps them forever. */
  RETENTION_HOURS: numeric(0),
  /** Inference-proxy sessions expire this many seconds after their last call. */
  PROXY_SESSION_TTL_S: numeric(3600),
  /** "true": the regression guard's webhook may point at private addresses. */
  GUARD_WEBHOOK_ALLOW_PRIVATE: z
    .string()
    .optional()
    .transform((value) => value === "true"),
});

export type Settings = z.output<typeof settingsSchema>;

const read = new WeakMap<object, Settings>();

/** The settings of these bindings (parsed on first use, then kept with them). */
export function settingsOf(env: BaseBindings): Settings {
  let settings = read.get(env);
  if (!settings) {
    // Every field has a default and accepts any string, so parsing cannot fail.
    settings = settingsSchema.parse(env);
    read.set(env, settings);
  }
  return settings;
}
