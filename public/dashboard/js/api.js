// @ts-check
// Typed client for the dashboard's read-only JSON API (same origin).
import { getToken } from "./auth.js";

/**
 * @typedef {{name: string, step: number, policy_version: number, batch_size: number, registered: boolean, created_at: number}} RunSummary
 * @typedef {{env_id: number | null, name: string | null, groups: number, sequences: number}} QueueByEnv
 * @typedef {{env_id: number, name: string, desired_name: string, group_size: number, weight: number,
 *   min_batch_allocation: number | null, max_token_length: number, connected: boolean,
 *   status: "active" | "stale" | "disconnected", heartbeat_age_s: number | null,
 *   groups_submitted: number, sequences_submitted: number, mean_score: number | null,
 *   mean_completion_tokens: number | null, items_in_flight: number | null,
 *   items_succeeded: number | null, items_failed: number | null,
 *   worker_status: "running" | "paused" | "evaluating" | "waiting_for_trainer" | "stopped" | null}} EnvStats
 * @typedef {{run: string, now: number, step: number, policy_version: number, batch_size: number,
 *   max_token_len: number, registered: boolean,
 *   queue: {groups: number, sequences: number, buffered_groups: number, buffered_sequences: number,
 *     oldest_queued_at: number | null, oldest_queued_age_s: number | null, by_env: QueueByEnv[]},
 *   leases: {outstanding: number, expired: number},
 *   rates: {window_s: number, ingest_groups_per_s: number, ingest_sequences_per_s: number,
 *     delivered_batches_per_s: number, delivered_sequences_per_s: number},
 *   batch_formation: {samples: number, last_ms: number | null, p50_ms: number | null, p99_ms: number | null},
 *   envs: EnvStats[],
 *   dead_letters: {count: number, recent: {id: string | number, env_id: number | null, error: string, created_at: number}[]},
 *   blocked_reason: string | null,
 *   policy_versions: {current: number, queued_min: number | null, queued_max: number | null}}} RunStats
 * @typedef {{t: number, ingest_groups: number, ingest_sequences: number, delivered_batches: number,
 *   delivered_sequences: number, mean_score: number | null}} TimePoint
 * @typedef {{bucket_s: number, points: TimePoint[]}} TimeSeries
 * @typedef {{bins: {lo: number, hi: number, count: number}[], samples: number}} ScoreHistogram
 * @typedef {{evals: {step: number, metrics: Record<string, number>, created_at: number}[]}} EvalResults
 * @typedef {"buffered" | "queued" | "leased" | "delivered"} GroupStatus
 * @typedef {string | number} Id group and batch ids (integers today; treated as opaque)
 * @typedef {{id: Id, env_id: number | null, env_name: string | null, status: GroupStatus,
 *   num_seqs: number, total_tokens: number, completion_tokens: number, score_mean: number | null,
 *   score_min: number | null, score_max: number | null, policy_version: number | null,
 *   created_at: number, batch_id: Id | null, step: number | null}} GroupMeta
 * @typedef {{groups: GroupMeta[], next_cursor: Id | null}} GroupPage
 * @typedef {{tokens: number[][], masks: number[][], scores: number[],
 *   advantages: number[][] | null, ref_logprobs: number[][] | null,
 *   messages: Record<string, unknown>[][] | null, generation_params: Record<string, unknown> | null,
 *   inference_logprobs: number[][] | null, overrides: Record<string, unknown>[] | null,
 *   group_overrides: Record<string, unknown> | null, images: unknown, env_id: number | null,
 *   distill_token_ids: number[][][] | null, distill_logprobs: number[][][] | null}} GroupPayload
 * @typedef {{group: GroupMeta, payload: GroupPayload, token_texts: string[][] | null}} GroupDetail
 * @typedef {{batch_id: Id, step: number, status: "leased" | "acked", num_groups: number,
 *   num_seqs: number, created_at: number, lease_expires_at: number | null, acked_at: number | null,
 *   max_staleness: number | null, policy_version_at_formation: number | null,
 *   groups: {id: Id, env_id: number | null, policy_version: number | null, num_seqs: number | null}[]}} BatchInfo
 * @typedef {{batches: BatchInfo[], next_cursor: Id | null}} BatchPage
 */

/** The server refused the request for lack of a valid token. */
export class AuthRequiredError extends Error {
  constructor() {
    super("API token required");
    this.name = "AuthRequiredError";
  }
}

/** Any other non-2xx answer. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   */
  constructor(status, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

/**
 * @param {string} path
 * @param {AbortSignal} [signal]
 * @returns {Promise<unknown>}
 */
export async function getJson(path, signal) {
  /** @type {Record<string, string>} */
  const headers = { accept: "application/json" };
  const token = getToken();
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(path, { headers, signal, cache: "no-store", credentials: "omit" });
  if (res.status === 401) {
    await res.body?.cancel();
    throw new AuthRequiredError();
  }
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      // The API's error envelope: {detail, error: {code, message, request_id}}.
      const body = /** @type {{error?: {message?: unknown}, detail?: unknown}} */ (
        await res.json()
      );
      const detail = body.error?.message ?? body.detail;
      if (typeof detail === "string") message = `${res.status}: ${detail}`;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiError(res.status, message);
  }
  return res.json();
}

/**
 * Builds a query string, leaving out empty values.
 * @param {Record<string, string | number | null | undefined>} params
 */
export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === null || value === undefined || value === "") continue;
    search.set(key, String(value));
  }
  const s = search.toString();
  return s ? `?${s}` : "";
}

/** @param {string} run */
const runPath = (run) => `/v1/runs/${encodeURIComponent(run)}`;

export const api = {
  /** @param {AbortSignal} [signal] @returns {Promise<{runs: RunSummary[]}>} */
  runs: (signal) => /** @type {Promise<{runs: RunSummary[]}>} */ (getJson("/v1/runs", signal)),
  /** @param {string} run @param {AbortSignal} [signal] @returns {Promise<RunStats>} */
  stats: (run, signal) =>
    /** @type {Promise<RunStats>} */ (getJson(`${runPath(run)}/stats`, signal)),
  /**
   * @param {string} run @param {{minutes: number, bucket_s: number}} range
   * @param {AbortSignal} [signal] @returns {Promise<TimeSeries>}
   */
  timeseries: (run, range, signal) =>
    /** @type {Promise<TimeSeries>} */ (
      getJson(`${runPath(run)}/timeseries${query(range)}`, signal)
    ),
  /** @param {string} run @param {number} envId @param {number} bins @param {AbortSignal} [signal] @returns {Promise<ScoreHistogram>} */
  scores: (run, envId, bins, signal) =>
    /** @type {Promise<ScoreHistogram>} */ (
      getJson(`${runPath(run)}/envs/${envId}/scores${query({ bins })}`, signal)
    ),
  /** @param {string} run @param {number} envId @param {AbortSignal} [signal] @returns {Promise<EvalResults>} */
  evals: (run, envId, signal) =>
    /** @type {Promise<EvalResults>} */ (getJson(`${runPath(run)}/envs/${envId}/evals`, signal)),
  /**
   * @param {string} run @param {Record<string, string | number | null | undefined>} filters
   * @param {AbortSignal} [signal] @returns {Promise<GroupPage>}
   */
  groups: (run, filters, signal) =>
    /** @type {Promise<GroupPage>} */ (getJson(`${runPath(run)}/groups${query(filters)}`, signal)),
  /** @param {string} run @param {Id} id @param {AbortSignal} [signal] @returns {Promise<GroupDetail>} */
  group: (run, id, signal) =>
    /** @type {Promise<GroupDetail>} */ (
      getJson(`${runPath(run)}/groups/${encodeURIComponent(String(id))}`, signal)
    ),
  /**
   * @param {string} run @param {{limit?: number, cursor?: Id | null}} page
   * @param {AbortSignal} [signal] @returns {Promise<BatchPage>}
   */
  batches: (run, page, signal) =>
    /** @type {Promise<BatchPage>} */ (getJson(`${runPath(run)}/batches${query(page)}`, signal)),
};
