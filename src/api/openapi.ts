/**
 * OpenAPI 3.1 document generated from the zod schemas that validate requests.
 */
import { z } from "zod";
import {
  ackRequestSchema,
  customJsonSchemas,
  envIdSchema,
  evalReportSchema,
  leaseRequestSchema,
  policyRequestSchema,
  registerEnvSchema,
  registrationSchema,
  scoredDataListSchema,
  scoredDataSchema,
} from "../core/schemas";

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, {
    io: "input",
    unrepresentable: "any",
    override: (ctx) => {
      const custom = customJsonSchemas.get(ctx.zodSchema as unknown as z.ZodType);
      if (custom) Object.assign(ctx.jsonSchema, custom);
    },
  }) as Record<string, unknown>;
}

type Op = {
  summary: string;
  body?: z.ZodType;
  bodyOptional?: boolean;
  responses: Record<string, string>;
  params?: string[];
};

const atropos: Record<string, Record<string, Op>> = {
  "/": { get: { summary: 'Liveness: {"message":"AtroposLib API"}', responses: { "200": "ok" } } },
  "/register": {
    post: {
      summary: "Register the trainer (Atropos); returns a 128-bit integer uuid",
      body: registrationSchema,
      responses: { "200": "{uuid}", "422": "validation error" },
    },
  },
  "/register-env": {
    post: {
      summary:
        "Register an environment; same env_key (or a stale env of the same name) resumes its env_id",
      body: registerEnvSchema,
      responses: { "200": "env registration or {status:'wait for trainer to start'}" },
    },
  },
  "/disconnect-env": {
    post: {
      summary: "Mark an env disconnected",
      body: envIdSchema,
      responses: { "200": "{status:'success'}", "404": "unknown env" },
    },
  },
  "/wandb_info": {
    get: { summary: "W&B group/project of the trainer", responses: { "200": "{group, project}" } },
  },
  "/info": {
    get: {
      summary: "batch_size and max_token_len (-1 before /register)",
      responses: { "200": "{batch_size, max_token_len}" },
    },
  },
  "/batch": {
    get: {
      summary: "Atropos batch pull (at-least-once: the next pull acks this batch)",
      responses: { "200": "{batch:[groups]|null}" },
    },
  },
  "/latest_example": {
    get: { summary: "The most recently queued group", responses: { "200": "group" } },
  },
  "/scored_data": {
    post: {
      summary: "Submit one scored group (gzip bodies accepted; Idempotency-Key honoured)",
      body: scoredDataSchema,
      responses: {
        "200":
          "{status:'received'}, {status:'buffered', buffer_size}, or {status:'received', duplicate:true} for a retry of a stored body",
        "400": "Invalid gzip payload",
        "413": "too large",
        "422": "validation error",
      },
    },
  },
  "/scored_data_list": {
    post: {
      summary: "Submit several groups, all or nothing",
      body: scoredDataListSchema,
      responses: {
        "200":
          "{status, groups_processed (groups stored by this request)[, buffered, last_buffer_size][, duplicates (groups of an earlier copy of this body)]}",
      },
    },
  },
  "/status": {
    get: {
      summary: "current_step and queue_size (groups)",
      responses: { "200": "{current_step, queue_size}" },
    },
  },
  "/status-env": {
    get: {
      summary:
        "Per-env scheduling numbers; env id as a JSON body on the GET (as Atropos clients send it) or ?env_id=",
      responses: { "200": "status", "404": "unknown env" },
    },
  },
  "/reset_data": {
    get: {
      summary:
        "Delete all data of the run: D1 rows, payloads, env checkpoints, env workers (refused cross-site)",
      responses: { "200": "Reset successful" },
    },
  },
};

const v1: Record<string, Record<string, Op>> = {
  "/v1/runs": { get: { summary: "List runs", responses: { "200": "{runs}" } } },
  "/v1/runs/{run}/batches/lease": {
    post: {
      summary: "Lease the next exact-size batch (exactly-once with ack)",
      body: leaseRequestSchema,
      bodyOptional: true,
      params: ["run"],
      responses: {
        "200":
          "{batch_id, lease_id, step, lease_expires_at, redelivered, groups: [{group_id, env_id, policy_version, num_seqs}], batch}",
        "204": "no batch can be formed; X-Atropos-Edge-Reason says why",
        "409": "no trainer registered",
      },
    },
  },
  "/v1/runs/{run}/batches/{batch_id}/ack": {
    post: {
      summary: "Acknowledge a leased batch (idempotent)",
      body: ackRequestSchema,
      bodyOptional: true,
      params: ["run", "batch_id"],
      responses: {
        "200": "{batch_id, status:'acked', already_acked, step}",
        "404": "unknown batch",
        "409": "lease expired and the batch was redelivered",
      },
    },
  },
  "/v1/runs/{run}/policy": {
    post: {
      summary: "Announce the trainer's policy version",
      body: policyRequestSchema,
      params: ["run"],
      responses: {
        "200": "{policy_version}",
        "409": 'version lower than the current one without "reset": true',
      },
    },
    get: {
      summary: "Current policy version",
      params: ["run"],
      responses: { "200": "{policy_version}" },
    },
  },
  "/v1/runs/{run}/stats": {
    get: {
      summary: "Queue depth, rates, leases, envs, dead letters, blocked reason",
      params: ["run"],
      responses: { "200": "stats" },
    },
  },
  "/v1/runs/{run}/timeseries": {
    get: {
      summary: "Ingest/delivery per time bucket (?minutes=&bucket_s=)",
      params: ["run"],
      responses: { "200": "{bucket_s, points}" },
    },
  },
  "/v1/runs/{run}/groups": {
    get: {
      summary:
        "Browse groups (?env_id=&min_score=&max_score=&policy_version=&since=&until=&status=&limit=&cursor=)",
      params: ["run"],
      responses: { "200": "{groups, next_cursor}" },
    },
  },
  "/v1/runs/{run}/groups/{id}": {
    get: {
      summary: "One group with its payload",
      params: ["run", "id"],
      responses: { "200": "{group, payload}" },
    },
  },
  "/v1/runs/{run}/batches": {
    get: {
      summary: "Batches with manifests",
      params: ["run"],
      responses: { "200": "{batches, next_cursor}" },
    },
  },
  "/v1/runs/{run}/envs/{env_id}/scores": {
    get: {
      summary: "Score histogram of an env",
      params: ["run", "env_id"],
      responses: { "200": "{bins, samples}" },
    },
  },
  "/v1/runs/{run}/envs/{env_id}/evals": {
    get: {
      summary: "Evaluation results over steps",
      params: ["run", "env_id"],
      responses: { "200": "{evals}" },
    },
    post: {
      summary: "Report evaluation metrics for a step",
      body: evalReportSchema,
      params: ["run", "env_id"],
      responses: { "200": "stored" },
    },
  },
  "/v1/runs/{run}/envs/{env_id}/checkpoints": {
    get: {
      summary: "List env checkpoints",
      params: ["run", "env_id"],
      responses: { "200": "{checkpoints}" },
    },
  },
  "/v1/runs/{run}/envs/{env_id}/checkpoints/{step}": {
    put: {
      summary: "Save env checkpoint state (JSON object ≤ 1 MB)",
      params: ["run", "env_id", "step"],
      responses: { "200": "saved" },
    },
    get: {
      summary: "Load the checkpoint at or before step ('latest' for the newest)",
      params: ["run", "env_id", "step"],
      responses: { "200": "{step, state, saved_at}", "404": "none" },
    },
  },
};

function operation(op: Op) {
  const out: Record<string, unknown> = {
    summary: op.summary,
    responses: Object.fromEntries(
      Object.entries(op.responses).map(([code, description]) => [code, { description }]),
    ),
  };
  if (op.params) {
    out.parameters = op.params.map((name) => ({
      name,
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
  }
  if (op.body) {
    out.requestBody = {
      required: !op.bodyOptional,
      content: { "application/json": { schema: jsonSchema(op.body) } },
    };
  }
  return out;
}

let cached: Record<string, unknown> | null = null;

export function openApiDocument(): Record<string, unknown> {
  if (cached) return cached;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [path, ops] of Object.entries({ ...atropos, ...v1 })) {
    paths[path] = Object.fromEntries(Object.entries(ops).map(([m, op]) => [m, operation(op)]));
  }
  for (const [path, ops] of Object.entries(atropos)) {
    if (path === "/") continue;
    paths[`/runs/{run}${path}`] = Object.fromEntries(
      Object.entries(ops).map(([m, op]) => [
        m,
        operation({ ...op, params: ["run"], summary: `${op.summary} (run-scoped)` }),
      ]),
    );
  }
  cached = {
    openapi: "3.1.0",
    info: {
      title: "atropos-edge rollout API",
      version: "0.1.0",
      description:
        "Atropos-compatible rollout API with exactly-once leases, idempotent submissions and policy-version staleness control.",
    },
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer" },
        basic: { type: "http", scheme: "basic" },
      },
    },
    security: [{ bearer: [] }, { basic: [] }],
    paths,
  };
  return cached;
}
