/**
 * Rollout-API client speaking the Atropos env wire (docs/API.md, docs/COMPATIBILITY.md) with web-standard APIs
 * only (fetch, CompressionStream, Web Crypto), so it runs in Node and in Workers.
 *
 * Beyond the Python env: an `Idempotency-Key` on every submission (random, kept across that
 * submission's retries, so a retried POST is deduplicated server-side), optional
 * `Authorization: Bearer`, and no data silently lost on a 4xx: the caller gets
 * `{ok: false, status, body}`. Auth and retries come from the shared HTTP client (core).
 */

import { abortableSleep } from "../../core/concurrency/abortable-sleep";
import {
  checkpointSchema,
  envStatusAnswerSchema,
  type InfoAnswer,
  infoResponseSchema,
  type RegisterEnvAnswer,
  registerEnvResponseSchema,
} from "../../core/wire/api-schemas";
import type { ScoredDataGroup } from "../../core/wire/group-types";
import {
  ApiResponseError,
  type HttpAnswer,
  HttpClient,
  parseAnswer,
  parseJsonAnswer,
} from "../../core/wire/http-client";
import type { RegisterEnv } from "../../core/wire/schemas";
import type { JsonObject } from "../base-env";
import type { EnvStatus } from "./scheduler";

/** The /register-env body as this client sends it (the route's schema, every field but env_key). */
export type RegisterEnvRequest = Pick<
  RegisterEnv,
  "max_token_length" | "desired_name" | "weight" | "group_size"
> &
  Required<Pick<RegisterEnv, "min_batch_allocation">>;

/** A successful registration: every field the answer may leave out is there. */
export type RegisterEnvResponse = Required<Omit<RegisterEnvAnswer, "status" | "resumed">> &
  Pick<RegisterEnvAnswer, "resumed"> & { status: "success" };

export type ServerInfo = InfoAnswer;

export interface SubmitResult {
  ok: boolean;
  status: number;
  body: unknown;
  idempotencyKey: string;
  /** Bytes on the wire (after gzip when used). */
  bytes: number;
  gzipped: boolean;
}

/**
 * GET with a JSON body, which fetch() forbids but Atropos' /status-env requires. Node callers pass
 * `nodeGetWithBody` (runtime/node-get-with-body.ts); without one, the client falls back to
 * `?env_id=` on a plain GET, which atropos-edge accepts (the original server does not).
 */
export type GetWithBody = (
  url: string,
  body: string,
  headers: Record<string, string>,
  signal?: AbortSignal,
) => Promise<{ status: number; text: string }>;

export interface ApiClientOptions {
  url: string;
  run?: string;
  token?: string;
  fetch?: typeof fetch;
  getWithBody?: GetWithBody;
  /** Attempts per request on 5xx / network errors (default 3). */
  attempts?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Bytes at or above which a body is gzipped (when that makes it smaller). */
  gzipThreshold?: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** The API answered with an error status; `status` and the raw `body` say what it refused. */
export { ApiResponseError as ApiError };

/** Base path: `{url}` for run "default", `{url}/runs/{run}` otherwise. */
export function apiBasePath(url: string, run = "default"): string {
  const root = url.replace(/\/+$/, "");
  return run === "default" ? root : `${root}/runs/${encodeURIComponent(run)}`;
}

export async function gzipBytes(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data as Uint8Array<ArrayBuffer>])
    .stream()
    .pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

export class RolloutApiClient {
  readonly base: string;
  private readonly options: ApiClientOptions & { gzipThreshold: number };
  private readonly http: HttpClient;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(options: ApiClientOptions) {
    this.options = { gzipThreshold: 1024, ...options };
    this.base = apiBasePath(options.url, options.run);
    this.sleep = options.sleep ?? abortableSleep;
    this.http = new HttpClient({
      token: options.token,
      attempts: options.attempts ?? 3,
      baseDelayMs: options.baseDelayMs ?? 500,
      maxDelayMs: options.maxDelayMs ?? 10_000,
      fetch: options.fetch,
      sleep: this.sleep,
    });
  }

  private request(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<HttpAnswer> {
    return this.http.send(method, `${this.base}${path}`, { json: body, signal });
  }

  /** POST /register-env until `status: "success"` (the trainer has started), polling every pollMs. */
  async registerEnv(
    body: RegisterEnvRequest,
    opts: { pollMs?: number; signal?: AbortSignal; onWait?: () => void } = {},
  ): Promise<RegisterEnvResponse> {
    for (;;) {
      const res = parseAnswer(
        await this.request("POST", "/register-env", body, opts.signal),
        "register-env",
        registerEnvResponseSchema,
      );
      if (res.status === "success") return res as RegisterEnvResponse;
      opts.onWait?.();
      await this.sleep(opts.pollMs ?? 1000, opts.signal);
    }
  }

  async info(signal?: AbortSignal): Promise<ServerInfo> {
    return parseAnswer(
      await this.request("GET", "/info", undefined, signal),
      "info",
      infoResponseSchema,
    );
  }

  /** GET /status-env with a JSON body `{"env_id"}`, as the Python env sends it. */
  async statusEnv(envId: number, signal?: AbortSignal): Promise<EnvStatus> {
    const body = JSON.stringify({ env_id: envId });
    const getWithBody = this.options.getWithBody;
    const res = getWithBody
      ? await this.http.withRetry(
          () =>
            getWithBody(
              `${this.base}/status-env`,
              body,
              this.http.headers({ "Content-Type": "application/json" }),
              signal,
            ),
          signal,
        )
      : await this.http.send("GET", `${this.base}/status-env?env_id=${envId}`, { signal });
    return parseAnswer(res, "status-env", envStatusAnswerSchema);
  }

  async disconnectEnv(envId: number, signal?: AbortSignal): Promise<void> {
    parseJsonAnswer(
      await this.request("POST", "/disconnect-env", { env_id: envId }, signal),
      "disconnect-env",
    );
  }

  /**
   * POST /v1/runs/{run}/envs/{envId}/metrics: values the env recorded during `step`, or
   * evaluation results (`kind: "eval"`). Throws ApiError on a refusal (404: not atropos-edge).
   */
  async reportMetrics(
    envId: number,
    report: { step: number; kind: "env" | "eval"; metrics: Record<string, number> },
    signal?: AbortSignal,
  ): Promise<void> {
    const root = this.options.url.replace(/\/+$/, "");
    const run = encodeURIComponent(this.options.run ?? "default");
    parseJsonAnswer(
      await this.http.send("POST", `${root}/v1/runs/${run}/envs/${envId}/metrics`, {
        json: report,
        signal,
      }),
      "metrics",
    );
  }

  /** `/v1/runs/{run}/envs/{envId}/checkpoints/{step}` (atropos-edge's checkpoint store). */
  private checkpointUrl(envId: number, step: number | "latest"): string {
    const root = this.options.url.replace(/\/+$/, "");
    const run = encodeURIComponent(this.options.run ?? "default");
    return `${root}/v1/runs/${run}/envs/${envId}/checkpoints/${step}`;
  }

  /** PUT …/checkpoints/{step}: the env's state (a JSON object up to 1 MiB). */
  async saveCheckpoint(
    envId: number,
    step: number,
    state: JsonObject,
    signal?: AbortSignal,
  ): Promise<void> {
    parseJsonAnswer(
      await this.http.send("PUT", this.checkpointUrl(envId, step), { json: state, signal }),
      "save checkpoint",
    );
  }

  /** GET …/checkpoints/{step}: the state saved at or before `step`, or null when there is none. */
  async loadCheckpoint(
    envId: number,
    step: number | "latest",
    signal?: AbortSignal,
  ): Promise<{ step: number; state: JsonObject } | null> {
    const res = await this.http.send("GET", this.checkpointUrl(envId, step), { signal });
    if (res.status === 404 && res.text.includes("checkpoint")) return null;
    const { step: saved, state } = parseAnswer(res, "load checkpoint", checkpointSchema);
    return { step: saved, state: state as JsonObject };
  }

  /**
   * POST /scored_data (one group) or /scored_data_list (an array), `env_id` stamped into each
   * group, gzip when the JSON is ≥ gzipThreshold bytes and compression helps. 4xx → not retried.
   */
  async submitGroups(
    groups: ScoredDataGroup | ScoredDataGroup[],
    envId: number | null,
    opts: { signal?: AbortSignal; idempotencyKey?: string; policyVersion?: number } = {},
  ): Promise<SubmitResult> {
    // The policy version the rollout was sampled under; without it the API stamps the version
    // current when the group arrives, which is later than the sampling.
    const version = opts.policyVersion;
    const stamp = (g: ScoredDataGroup): ScoredDataGroup => ({
      ...g,
      env_id: envId,
      ...(version !== undefined && g.policy_version == null ? { policy_version: version } : {}),
    });
    const payload = Array.isArray(groups) ? groups.map(stamp) : stamp(groups);
    const path = Array.isArray(groups) ? "/scored_data_list" : "/scored_data";
    const json = JSON.stringify(payload);
    const raw = new TextEncoder().encode(json);
    let bytes: Uint8Array = raw;
    let gzipped = false;
    if (raw.length >= this.options.gzipThreshold) {
      const compressed = await gzipBytes(raw);
      if (compressed.length < raw.length) {
        bytes = compressed;
        gzipped = true;
      }
    }
    // One key per submission, kept across its retries: the key decides what is a retry, so
    // an identical group sent again later is stored again (docs/API.md, "Submitting groups").
    const idempotencyKey = opts.idempotencyKey ?? crypto.randomUUID().replaceAll("-", "");
    const res = await this.http.send("POST", `${this.base}${path}`, {
      bytes: bytes as Uint8Array<ArrayBuffer>,
      headers: {
        "Content-Type": "application/json",
        "Idempotency-Key": idempotencyKey,
        ...(gzipped ? { "Content-Encoding": "gzip" } : {}),
      },
      signal: opts.signal,
    });
    let body: unknown = res.text;
    try {
      body = JSON.parse(res.text);
    } catch {
      // keep the text
    }
    return {
      ok: res.status < 400,
      status: res.status,
      body,
      idempotencyKey,
      bytes: bytes.length,
      gzipped,
    };
  }
}
