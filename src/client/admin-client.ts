/**
 * Administration over the rollout API: tokens (POST/GET /v1/tokens, DELETE /v1/tokens/{id}, with
 * the admin token), a run's inference servers (PUT/GET /v1/runs/{run}/inference) and its controls
 * (PATCH /v1/runs/{run}/envs/{id}, …). No retries: a retried create would make a second token.
 */
import { z } from "zod";
import { errorMessage } from "../core/errors";
import {
  type EnvControl,
  type EnvControlRequest,
  type EnvWorker,
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
} from "../core/wire/api-schemas";

export type { EnvWorker };

import {
  ApiResponseError,
  HttpClient,
  type HttpMethod,
  parseAnswer,
} from "../core/wire/http-client";
import type { APIServerConfigInput } from "../core/wire/server-config";
import {
  type CreatedToken,
  type CreateTokenRequest,
  createdTokenSchema,
  type TokenInfo,
  tokenInfoSchema,
  tokenListSchema,
} from "../core/wire/tokens";

/** The body of POST /v1/runs/{run}/env-workers (the route's schema gives the defaults). */
export interface EnvWorkerRequest {
  env: string;
  instance?: string;
  config?: Record<string, unknown>;
  /** "run": the run's stored servers; or servers without api_key. */
  inference?: "run" | APIServerConfigInput[];
}

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

/** The API answered with an error status (the one error class of every client). */
export { ApiResponseError as AdminApiError };

export class AdminClient {
  private readonly url: string;
  private readonly http: HttpClient;

  constructor(options: AdminClientOptions) {
    this.url = options.url.replace(/\/+$/, "");
    // One attempt: a retried create would make a second token.
    this.http = new HttpClient({
      token: options.token,
      attempts: 1,
      baseDelayMs: 0,
      maxDelayMs: 0,
      fetch: options.fetch,
    });
  }

  private async request<T extends z.ZodType>(
    method: HttpMethod,
    path: string,
    schema: T,
    body?: unknown,
  ): Promise<z.infer<T>> {
    let res: Awaited<ReturnType<HttpClient["send"]>>;
    try {
      res = await this.http.send(method, `${this.url}${path}`, { json: body });
    } catch (err) {
      throw new Error(
        `${method} ${this.url}${path} failed (${errorMessage(err)}); is the API running and --api right?`,
      );
    }
    return parseAnswer(res, `${method} ${path}`, schema);
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
