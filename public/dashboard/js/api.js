// @ts-check
// Typed client for the dashboard's JSON API (same origin): reads, and the mix controls.
import { getToken } from "./auth.js";

/**
 * The API's response shapes, from the same zod schemas that document and check them
 * (src/core/wire/api-schemas/); `npm run typecheck` checks this file against them. Type-only imports:
 * the browser never loads those modules.
 * @typedef {import("../../../src/core/wire/api-schemas").RunSummary} RunSummary
 * @typedef {import("../../../src/core/wire/api-schemas").RunStats} RunStats
 * @typedef {import("../../../src/core/wire/api-schemas").EnvStats} EnvStats
 * @typedef {RunStats["queue"]["by_env"][number]} QueueByEnv
 * @typedef {import("../../../src/core/wire/api-schemas").TimeSeries} TimeSeries
 * @typedef {TimeSeries["points"][number]} TimePoint
 * @typedef {import("../../../src/core/wire/api-schemas").ScoreHistogram} ScoreHistogram
 * @typedef {import("../../../src/core/wire/api-schemas").EvalList} EvalResults
 * @typedef {import("../../../src/core/wire/api-schemas").MetricsResponse} Metrics
 * @typedef {import("../../../src/core/wire/api-schemas").MetricSeries} MetricSeries
 * @typedef {import("../../../src/core/wire/api-schemas").GroupRow} GroupMeta
 * @typedef {GroupMeta["status"]} GroupStatus
 * @typedef {import("../../../src/core/wire/api-schemas").GroupPage} GroupPage
 * @typedef {import("../../../src/core/wire/schemas").ScoredDataInput} GroupPayload
 * @typedef {import("../../../src/core/wire/judge-schemas").JudgeReport} JudgeReport
 * @typedef {{group: GroupMeta, payload: GroupPayload, token_texts: string[][] | null}} GroupDetail
 * @typedef {import("../../../src/core/wire/trajectory").GroupTrajectories} GroupTrajectories
 * @typedef {import("../../../src/core/wire/trajectory").Trajectory} Trajectory
 * @typedef {import("../../../src/core/wire/api-schemas").BatchRow} BatchInfo
 * @typedef {import("../../../src/core/wire/api-schemas").BatchPage} BatchPage
 * @typedef {import("../../../src/core/wire/api-schemas").RunEventList} RunEventList
 * @typedef {import("../../../src/core/wire/api-schemas").EnvControl} EnvControl
 * @typedef {import("../../../src/core/wire/api-schemas").EnvControlRequest} EnvControlRequest
 * @typedef {import("../../../src/core/wire/task-registry").TaskList} TaskList
 * @typedef {TaskList["tasks"][number]} TaskInfo
 * @typedef {string | number} Id group and batch ids (treated as opaque)
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
 * Sends a JSON body (the dashboard's few controls); errors as getJson's.
 * @param {"PATCH" | "POST" | "PUT"} method
 * @param {string} path
 * @param {unknown} body
 * @returns {Promise<unknown>}
 */
export async function sendJson(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { accept: "application/json", "content-type": "application/json" };
  const token = getToken();
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(path, {
    method,
    headers,
    body: JSON.stringify(body),
    cache: "no-store",
    credentials: "omit",
  });
  if (res.status === 401) throw new AuthRequiredError();
  const text = await res.text();
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const parsed = /** @type {{error?: {message?: unknown}}} */ (JSON.parse(text));
      if (typeof parsed.error?.message === "string")
        message = `${res.status}: ${parsed.error.message}`;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiError(res.status, message);
  }
  return JSON.parse(text);
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
  /** @param {string} run @param {number} envId @param {AbortSignal} [signal] @returns {Promise<ScoreHistogram>} */
  scores: (run, envId, signal) =>
    /** @type {Promise<ScoreHistogram>} */ (
      getJson(`${runPath(run)}/envs/${envId}/scores`, signal)
    ),
  /** @param {string} run @param {number} envId @param {AbortSignal} [signal] @returns {Promise<EvalResults>} */
  evals: (run, envId, signal) =>
    /** @type {Promise<EvalResults>} */ (getJson(`${runPath(run)}/envs/${envId}/evals`, signal)),
  /**
   * @param {string} run
   * @param {{name?: string, env?: number, kind?: string, from_step?: number, to_step?: number}} filter
   * @param {AbortSignal} [signal] @returns {Promise<Metrics>}
   */
  metrics: (run, filter, signal) =>
    /** @type {Promise<Metrics>} */ (getJson(`${runPath(run)}/metrics${query(filter)}`, signal)),
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
  /** @param {string} run @param {Id} id @param {AbortSignal} [signal] @returns {Promise<GroupTrajectories>} */
  trajectories: (run, id, signal) =>
    /** @type {Promise<GroupTrajectories>} */ (
      getJson(`${runPath(run)}/groups/${encodeURIComponent(String(id))}/trajectories`, signal)
    ),
  /**
   * @param {string} run @param {{limit?: number, cursor?: Id | null}} page
   * @param {AbortSignal} [signal] @returns {Promise<BatchPage>}
   */
  batches: (run, page, signal) =>
    /** @type {Promise<BatchPage>} */ (getJson(`${runPath(run)}/batches${query(page)}`, signal)),
  /** @param {string} run @param {number} limit @param {AbortSignal} [signal] @returns {Promise<RunEventList>} */
  events: (run, limit, signal) =>
    /** @type {Promise<RunEventList>} */ (
      getJson(`${runPath(run)}/events${query({ limit })}`, signal)
    ),
  /** @param {string} run @param {AbortSignal} [signal] @returns {Promise<TaskList>} */
  tasks: (run, signal) =>
    /** @type {Promise<TaskList>} */ (getJson(`${runPath(run)}/tasks`, signal)),
  /** @param {string} run @param {number} envId @param {EnvControlRequest} change @returns {Promise<EnvControl>} */
  updateEnv: (run, envId, change) =>
    /** @type {Promise<EnvControl>} */ (sendJson("PATCH", `${runPath(run)}/envs/${envId}`, change)),
};
