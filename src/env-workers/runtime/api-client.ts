/**
 * Rollout-API client speaking the Atropos env wire (docs/API.md, docs/COMPATIBILITY.md) with web-standard APIs
 * only (fetch, CompressionStream, Web Crypto), so it runs in Node and in Workers.
 *
 * Beyond the Python env: an `Idempotency-Key` on every submission (SHA-256 of env id + body, so a
 * retried POST can be deduplicated server-side), optional `Authorization: Bearer`, and no data
 * silently lost on a 4xx: the caller gets `{ok: false, status, body}`.
 */

import { abortableSleep } from "../../core/abortable-sleep";
import type { ScoredDataGroup } from "../../core/group-types";
import type { EnvStatus } from "./scheduler";

export interface RegisterEnvRequest {
  max_token_length: number;
  desired_name: string;
  weight: number;
  group_size: number;
  min_batch_allocation: number | null;
}

export interface RegisterEnvResponse {
  status: "success";
  env_id: number;
  wandb_name: string;
  checkpoint_dir: string;
  starting_step: number;
  checkpoint_interval: number;
  num_steps: number;
}

export interface ServerInfo {
  batch_size: number;
  max_token_len: number;
}

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

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

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
  private readonly options: Required<
    Pick<ApiClientOptions, "attempts" | "baseDelayMs" | "maxDelayMs" | "gzipThreshold">
  > &
    ApiClientOptions;
  private readonly doFetch: typeof fetch;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(options: ApiClientOptions) {
    this.options = {
      attempts: 3,
      baseDelayMs: 500,
      maxDelayMs: 10_000,
      gzipThreshold: 1024,
      ...options,
    };
    this.base = apiBasePath(options.url, options.run);
    this.doFetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.sleep = options.sleep ?? abortableSleep;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { ...extra };
    if (this.options.token) h.Authorization = `Bearer ${this.options.token}`;
    return h;
  }

  /** Retries network errors and 5xx with exponential backoff + jitter; returns the last response. */
  private async withRetry<T extends { status: number }>(
    attempt: () => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    let lastError: unknown;
    for (let i = 0; i < this.options.attempts; i++) {
      if (i > 0) {
        const cap = Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** (i - 1));
        await this.sleep(cap / 2 + Math.random() * (cap / 2), signal);
      }
      try {
        const res = await attempt();
        if (res.status < 500 || i === this.options.attempts - 1) return res;
        lastError = new ApiError(`HTTP ${res.status}`, res.status, "");
      } catch (err) {
        if (signal?.aborted) throw err;
        lastError = err;
      }
    }
    throw lastError instanceof Error ? lastError : new Error(String(lastError));
  }

  private async request(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<{ status: number; text: string }> {
    return this.withRetry(async () => {
      const res = await this.doFetch(`${this.base}${path}`, {
        method,
        headers: this.headers(body === undefined ? {} : { "Content-Type": "application/json" }),
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
      return { status: res.status, text: await res.text() };
    }, signal);
  }

  private static json<T>(res: { status: number; text: string }, what: string): T {
    if (res.status >= 400)
      throw new ApiError(
        `${what}: HTTP ${res.status}: ${res.text.slice(0, 300)}`,
        res.status,
        res.text,
      );
    try {
      return JSON.parse(res.text) as T;
    } catch {
      throw new ApiError(
        `${what}: response is not JSON: ${res.text.slice(0, 200)}`,
        res.status,
        res.text,
      );
    }
  }

  /** POST /register-env until `status: "success"` (the trainer has started), polling every pollMs. */
  async registerEnv(
    body: RegisterEnvRequest,
    opts: { pollMs?: number; signal?: AbortSignal; onWait?: () => void } = {},
  ): Promise<RegisterEnvResponse> {
    for (;;) {
      const res = RolloutApiClient.json<{ status?: string } & Partial<RegisterEnvResponse>>(
        await this.request("POST", "/register-env", body, opts.signal),
        "register-env",
      );
      if (res.status === "success") return res as RegisterEnvResponse;
      opts.onWait?.();
      await this.sleep(opts.pollMs ?? 1000, opts.signal);
    }
  }

  async info(signal?: AbortSignal): Promise<ServerInfo> {
    return RolloutApiClient.json(await this.request("GET", "/info", undefined, signal), "info");
  }

  /** GET /status-env with a JSON body `{"env_id"}`, as the Python env sends it. */
  async statusEnv(envId: number, signal?: AbortSignal): Promise<EnvStatus> {
    const body = JSON.stringify({ env_id: envId });
    const getWithBody = this.options.getWithBody;
    const res = await this.withRetry(async () => {
      if (getWithBody) {
        return getWithBody(
          `${this.base}/status-env`,
          body,
          this.headers({ "Content-Type": "application/json" }),
          signal,
        );
      }
      const r = await this.doFetch(`${this.base}/status-env?env_id=${envId}`, {
        headers: this.headers(),
        signal,
      });
      return { status: r.status, text: await r.text() };
    }, signal);
    return RolloutApiClient.json(res, "status-env");
  }

  async disconnectEnv(envId: number, signal?: AbortSignal): Promise<void> {
    RolloutApiClient.json(
      await this.request("POST", "/disconnect-env", { env_id: envId }, signal),
      "disconnect-env",
    );
  }

  /**
   * POST /scored_data (one group) or /scored_data_list (an array), `env_id` stamped into each
   * group, gzip when the JSON is ≥ gzipThreshold bytes and compression helps. 4xx → not retried.
   */
  async submitGroups(
    groups: ScoredDataGroup | ScoredDataGroup[],
    envId: number | null,
    opts: { signal?: AbortSignal; idempotencyKey?: string } = {},
  ): Promise<SubmitResult> {
    const stamp = (g: ScoredDataGroup): ScoredDataGroup => ({ ...g, env_id: envId });
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
    const headers = this.headers({
      "Content-Type": "application/json",
      "Idempotency-Key": idempotencyKey,
      ...(gzipped ? { "Content-Encoding": "gzip" } : {}),
    });
    const res = await this.withRetry(async () => {
      const r = await this.doFetch(`${this.base}${path}`, {
        method: "POST",
        headers,
        body: bytes as Uint8Array<ArrayBuffer>,
        signal: opts.signal,
      });
      return { status: r.status, text: await r.text() };
    }, opts.signal);
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
