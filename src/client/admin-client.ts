/**
 * Administration over the rollout API: tokens (POST/GET /v1/tokens, DELETE /v1/tokens/{id}, with
 * the admin token), a run's inference servers (PUT/GET /v1/runs/{run}/inference) and its controls
 * (PATCH /v1/runs/{run}/envs/{id}, …). No retries: a retried create would make a second token.
 */
import { z } from "zod";
import {
  type EnvControl,
  type EnvControlRequest,
  envControlSchema,
  envWorkerSchema,
  type GuardConfig,
  type GuardConfigRequest,
  type GuardStatus,
  guardConfigSchema,
  guardStatusSchema,
  type ReplayConfig,
  type ReplayConfigRequest,
  type ReplayStatus,
  type RunEvent,
  type RunInference,
  replayConfigSchema,
  replayStatusSchema,
  runEventListSchema,
  runInferenceSchema,
} from "../core/api-schemas";
import type { APIServerConfigInput } from "../core/server-config";
import {
  type CreatedToken,
  type CreateTokenRequest,
  createdTokenSchema,
  type TokenInfo,
  tokenInfoSchema,
  tokenListSchema,
} from "../core/tokens";

/** The body of POST /v1/runs/{run}/env-workers (the route's schema gives the defaults). */
export interface EnvWorkerRequest {
  env: string;
  instance?: string;
  config?: Record<string, unknown>;
  /** "run": the run's stored servers; or servers without api_key. */
  inference?: "run" | APIServerConfigInput[];
}

/** An env worker as the env-worker routes answer (its feeder's summary). */
export type EnvWorker = z.infer<typeof envWorkerSchema>;

const envWorkerStopSchema = z.object({ status: z.string() });

function envWorkerPath(run: string, env: string, instance: string): string {
  return `/v1/runs/${encodeURIComponent(run)}/env-workers/${encodeURIComponent(env)}/${encodeURIComponent(instance)}`;
}

export interface AdminClientOptions {
  url: string;
  /** The admin token (the deployment's API_TOKEN). */
  token?: string;
  fetch?: typeof fetch;
}

export class AdminApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "AdminApiError";
  }
}

export class AdminClient {
  private readonly url: string;
  private readonly token: string | undefined;
  private readonly doFetch: typeof fetch;

  constructor(options: AdminClientOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.token = options.token;
    this.doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  private async request<T extends z.ZodType>(
    method: string,
    path: string,
    schema: T,
    body?: unknown,
  ): Promise<z.infer<T>> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let res: Response;
    try {
      res = await this.doFetch(`${this.url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new Error(
        `${method} ${this.url}${path} failed (${err instanceof Error ? err.message : String(err)}); is the API running and --api right?`,
      );
    }
    const text = await res.text();
    if (res.status >= 400) {
      let message = text.slice(0, 300);
      try {
        const parsed = JSON.parse(text) as { error?: { message?: string } };
        message = parsed.error?.message ?? message;
      } catch {
        // not JSON: keep the text
      }
      throw new AdminApiError(`${method} ${path}: HTTP ${res.status}: ${message}`, res.status);
    }
    return schema.parse(JSON.parse(text));
  }

  createToken(request: CreateTokenRequest): Promise<CreatedToken> {
    return this.request("POST", "/v1/tokens", createdTokenSchema, request);
  }

  async listTokens(): Promise<TokenInfo[]> {
    return (await this.request("GET", "/v1/tokens", tokenListSchema)).tokens;
  }

  /** Sets a run's inference servers (keys are stored by the API, never returned). */
  setInference(run: string, servers: APIServerConfigInput[]): Promise<RunInference> {
    return this.request(
      "PUT",
      `/v1/runs/${encodeURIComponent(run)}/inference`,
      runInferenceSchema,
      servers,
    );
  }

  getInference(run: string): Promise<RunInference> {
    return this.request("GET", `/v1/runs/${encodeURIComponent(run)}/inference`, runInferenceSchema);
  }

  revokeToken(id: string): Promise<TokenInfo> {
    return this.request("DELETE", `/v1/tokens/${encodeURIComponent(id)}`, tokenInfoSchema);
  }

  setReplay(run: string, change: ReplayConfigRequest): Promise<ReplayConfig> {
    return this.request(
      "PUT",
      `/v1/runs/${encodeURIComponent(run)}/replay`,
      replayConfigSchema,
      change,
    );
  }

  replay(run: string): Promise<ReplayStatus> {
    return this.request("GET", `/v1/runs/${encodeURIComponent(run)}/replay`, replayStatusSchema);
  }

  setGuard(run: string, change: GuardConfigRequest): Promise<GuardConfig> {
    return this.request(
      "PUT",
      `/v1/runs/${encodeURIComponent(run)}/guard`,
      guardConfigSchema,
      change,
    );
  }

  guard(run: string): Promise<GuardStatus> {
    return this.request("GET", `/v1/runs/${encodeURIComponent(run)}/guard`, guardStatusSchema);
  }

  async events(run: string, limit: number): Promise<RunEvent[]> {
    const path = `/v1/runs/${encodeURIComponent(run)}/events?limit=${limit}`;
    return (await this.request("GET", path, runEventListSchema)).events;
  }

  /** Starts (or reconfigures) an env worker: POST /v1/runs/{run}/env-workers. */
  startEnvWorker(run: string, request: EnvWorkerRequest): Promise<EnvWorker> {
    return this.request(
      "POST",
      `/v1/runs/${encodeURIComponent(run)}/env-workers`,
      envWorkerSchema,
      request,
    );
  }

  /** GET /v1/runs/{run}/env-workers/{env}/{instance}. */
  envWorker(run: string, env: string, instance: string): Promise<EnvWorker> {
    return this.request("GET", envWorkerPath(run, env, instance), envWorkerSchema);
  }

  /** POST …/env-workers/{env}/{instance}/stop; its status after stopping. */
  stopEnvWorker(run: string, env: string, instance: string): Promise<{ status: string }> {
    return this.request("POST", `${envWorkerPath(run, env, instance)}/stop`, envWorkerStopSchema);
  }

  updateEnv(run: string, envId: number, change: EnvControlRequest): Promise<EnvControl> {
    return this.request(
      "PATCH",
      `/v1/runs/${encodeURIComponent(run)}/envs/${envId}`,
      envControlSchema,
      change,
    );
  }
}
