/**
 * TrainerClient: the trainer side of the rollout API with web-standard fetch only (Node or Worker).
 * Exactly-once delivery through lease/ack (/v1/runs/{run}/batches/…), Atropos registration, policy
 * versions and stats. Network errors and 5xx are retried with exponential backoff + jitter; 4xx are
 * reported at once with the server's message. Every answer is checked against its route's zod
 * schema (core/api-schemas/), which also gives its type.
 */

import type { z } from "zod";
import { abortableSleep } from "../core/concurrency/abortable-sleep";
import { errorMessage } from "../core/errors";
import {
  ackResponseSchema,
  type GroupPage,
  groupDetailSchema,
  groupPageSchema,
  leaseResponseSchema,
  type ManifestEntry,
  policyResponseSchema,
  registerResponseSchema,
  runStatsSchema,
  type RunStats as Stats,
} from "../core/wire/api-schemas";
import type { ScoredDataGroup } from "../core/wire/group-types";
import {
  ApiResponseError,
  type HttpAnswer,
  HttpClient,
  parseAnswer,
} from "../core/wire/http-client";
import type { Registration } from "../core/wire/schemas";
import { type GroupTrajectories, groupTrajectoriesSchema } from "../core/wire/trajectory";

export type { GroupPage };

export interface TrainerClientOptions {
  url: string;
  run?: string;
  token?: string;
  /** Attempts per request on 5xx / network errors (default 4). */
  attempts?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  fetch?: typeof fetch;
}

type RequiredKeys = "batch_size" | "max_token_len" | "num_steps";
/** Atropos' /register body (its schema's shape); `register` fills in what is left out. */
export type TrainerRegistration = Pick<Registration, RequiredKeys> &
  Partial<Omit<Registration, RequiredKeys>>;

/** A group as delivered to a trainer: Atropos' 14 keys (env_id stamped by the API). */
export type DeliveredGroup = ScoredDataGroup & Record<string, unknown>;

/** What the API records about each leased group (same order as `groups`). */
export type LeasedGroupInfo = ManifestEntry;

export interface LeasedBatch {
  batchId: string;
  leaseId: string;
  step: number;
  leaseExpiresAt: number;
  redelivered: boolean;
  groups: DeliveredGroup[];
  /** Per group, in the order of `groups`. */
  manifest: LeasedGroupInfo[];
}

export type LeaseResult = { batch: LeasedBatch; reason: null } | { batch: null; reason: string };

/** The API answered with an error status; `status` and the raw `body` say what it refused. */
export { ApiResponseError as TrainerApiError };

export class TrainerClient {
  readonly url: string;
  readonly run: string;
  private readonly http: HttpClient;

  constructor(options: TrainerClientOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.run = options.run ?? "default";
    this.http = new HttpClient({
      token: options.token,
      attempts: options.attempts ?? 4,
      baseDelayMs: options.baseDelayMs ?? 250,
      maxDelayMs: options.maxDelayMs ?? 5000,
      fetch: options.fetch,
    });
  }

  /** Atropos paths: root for run "default", /runs/{run} otherwise. */
  private get atroposBase(): string {
    return this.run === "default" ? this.url : `${this.url}/runs/${encodeURIComponent(this.run)}`;
  }

  private get v1Base(): string {
    return `${this.url}/v1/runs/${encodeURIComponent(this.run)}`;
  }

  private async send(
    method: "GET" | "POST",
    url: string,
    body?: unknown,
  ): Promise<{ status: number; text: string; headers: Headers }> {
    try {
      return await this.http.send(method, url, {
        json: body,
        headers: { "Accept-Encoding": "gzip" },
      });
    } catch (err) {
      const detail = errorMessage(err);
      throw new Error(
        `${method} ${url} failed after ${this.http.attempts} attempts (${detail}); is the API running? (npm run dev)`,
      );
    }
  }

  private parse<S extends z.ZodType>(res: HttpAnswer, what: string, schema: S): z.output<S> {
    return parseAnswer(res, what, schema);
  }

  /** POST /register; returns the trainer uuid. */
  async register(registration: TrainerRegistration): Promise<{ uuid: string }> {
    const body = {
      wandb_group: "atropos-edge",
      wandb_project: "atropos-edge",
      checkpoint_dir: "checkpoints",
      save_checkpoint_interval: -1,
      starting_step: 0,
      ...registration,
    };
    const res = this.parse(
      await this.send("POST", `${this.atroposBase}/register`, body),
      "register",
      registerResponseSchema,
    );
    return { uuid: String(res.uuid) };
  }

  /**
   * Announces the trainer's policy version. Versions only move forward; `reset` allows a lower
   * one (a trainer that restarted its numbering says so on its first announcement).
   */
  async setPolicyVersion(
    version: number,
    options: { reset?: boolean } = {},
  ): Promise<z.infer<typeof policyResponseSchema>> {
    const body = options.reset ? { version, reset: true } : { version };
    return this.parse(
      await this.send("POST", `${this.v1Base}/policy`, body),
      "set policy version",
      policyResponseSchema,
    );
  }

  /** Lease the next batch; `{batch: null, reason}` when none is ready (HTTP 204). */
  async lease(
    options: { leaseSeconds?: number; maxStaleness?: number } = {},
  ): Promise<LeaseResult> {
    const body: Record<string, number> = {};
    if (options.leaseSeconds !== undefined) body.lease_seconds = options.leaseSeconds;
    if (options.maxStaleness !== undefined) body.max_staleness = options.maxStaleness;
    const res = await this.send("POST", `${this.v1Base}/batches/lease`, body);
    if (res.status === 204) {
      return { batch: null, reason: res.headers.get("x-atropos-edge-reason") ?? "no batch ready" };
    }
    const parsed = this.parse(res, "lease", leaseResponseSchema);
    return {
      batch: {
        batchId: parsed.batch_id,
        leaseId: parsed.lease_id,
        step: parsed.step,
        leaseExpiresAt: parsed.lease_expires_at,
        redelivered: parsed.redelivered,
        // Each group is an object (checked); its fields were validated when it was submitted, and
        // checking every token again here would double a trainer's work per batch.
        groups: parsed.batch as DeliveredGroup[],
        manifest: parsed.groups,
      },
      reason: null,
    };
  }

  async ack(
    batch: Pick<LeasedBatch, "batchId" | "leaseId">,
  ): Promise<z.infer<typeof ackResponseSchema>> {
    return this.parse(
      await this.send("POST", `${this.v1Base}/batches/${encodeURIComponent(batch.batchId)}/ack`, {
        lease_id: batch.leaseId,
      }),
      "ack",
      ackResponseSchema,
    );
  }

  /** GET /v1/runs/{run}/stats (see docs/DASHBOARD for the shape). */
  async stats(): Promise<RunStats> {
    return this.parse(await this.send("GET", `${this.v1Base}/stats`), "stats", runStatsSchema);
  }

  /**
   * The run's stats as a stream: one snapshot now, then one every `intervalMs`, until the loop
   * that consumes it stops or `signal` aborts (`for await (const s of trainer.watchStats())`).
   */
  async *watchStats(intervalMs = 1000, signal?: AbortSignal): AsyncGenerator<RunStats> {
    while (!signal?.aborted) {
      yield await this.stats();
      // An abort ends the wait early; the loop condition then ends the stream.
      await abortableSleep(intervalMs, signal).catch(() => {});
    }
  }

  /** Read-only group listing (GET /v1/runs/{run}/groups). */
  async listGroups(query: Record<string, string | number> = {}): Promise<GroupPage> {
    const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
    const suffix = qs.size > 0 ? `?${qs}` : "";
    return this.parse(
      await this.send("GET", `${this.v1Base}/groups${suffix}`),
      "list groups",
      groupPageSchema,
    );
  }

  async getGroup(
    id: number,
  ): Promise<Omit<z.infer<typeof groupDetailSchema>, "payload"> & { payload: DeliveredGroup }> {
    const detail = this.parse(
      await this.send("GET", `${this.v1Base}/groups/${id}`),
      `group ${id}`,
      groupDetailSchema,
    );
    // The payload is an object (checked), served as it was validated at ingest.
    return { ...detail, payload: detail.payload as DeliveredGroup };
  }

  /** The trajectories stored beside a group (agent envs, proxy sessions); empty when none. */
  async getTrajectories(id: number): Promise<GroupTrajectories> {
    return this.parse(
      await this.send("GET", `${this.v1Base}/groups/${id}/trajectories`),
      `trajectories of group ${id}`,
      groupTrajectoriesSchema,
    );
  }
}

/** The parts of /stats the CLI reads (the API returns more; src/core/wire/api-schemas/). */
export type RunStats = Pick<
  Stats,
  "run" | "step" | "policy_version" | "batch_size" | "registered" | "policy_versions"
> & {
  queue: Pick<Stats["queue"], "groups" | "sequences" | "buffered_groups" | "by_env">;
  rates: Pick<Stats["rates"], "delivered_batches_per_s" | "ingest_sequences_per_s">;
  envs: Pick<
    Stats["envs"][number],
    "env_id" | "name" | "status" | "groups_submitted" | "mean_score"
  >[];
  blocked_reason: Stats["blocked_reason"];
};
