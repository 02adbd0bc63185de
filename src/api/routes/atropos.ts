/**
 * The Atropos rollout API, path for path (docs/API.md, docs/COMPATIBILITY.md), with its bugs fixed
 * (docs/COMPATIBILITY.md). Mounted at the root (run "default") and under /runs/{run}.
 */
import { Hono } from "hono";
import type { z } from "zod";
import { envIdSchema, registerEnvSchema, registrationSchema } from "../../core/schemas";
import { registerResponseJson } from "../../core/uuid128";
import { summarizeDetails, toValidationDetails } from "../../core/validation";
import { numberVar } from "../bindings";
import { parseJson, readBody } from "../body";
import { type AppContext, type AppEnv, coordinator, keepAliveOf, runOf } from "../context";
import { canonicalPayload, streamGroups } from "../delivery";
import { ApiError, unwrapRpc } from "../errors";
import {
  type IngestItem,
  ingestGroups,
  sha256Hex,
  submissionDedupeKey,
  summarizeGroup,
  validateGroup,
  validateGroupList,
} from "../ingest";
import { requestMemoryCost, withMemory } from "../memory-budget";
import { findAnswer, storeAnswer, validIdempotencyKey } from "../storage/idempotency";
import { GROUP_REF_COLUMNS, type GroupRefRow, groupRef } from "../storage/payloads";
import { getRun, queueCounts } from "../storage/runs";
import { statusForEnv } from "../storage/status";

export function bodyLimits(c: AppContext) {
  return {
    maxBodyBytes: numberVar(c.env.MAX_BODY_BYTES, 64 * 1024 * 1024),
    maxInflatedBytes: numberVar(c.env.MAX_INFLATED_BYTES, 64 * 1024 * 1024),
  };
}

/** Reads and validates a JSON body; with `optional`, an empty body counts as `{}`. */
export async function jsonBody<T extends z.ZodType>(
  c: AppContext,
  schema: T,
  options: { optional?: boolean } = {},
): Promise<z.infer<T>> {
  const { bytes } = await readBody(c.req.raw, bodyLimits(c));
  const json = options.optional && bytes.byteLength === 0 ? {} : parseJson(bytes);
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const details = toValidationDetails(parsed.error, json);
    throw new ApiError("VALIDATION_FAILED", summarizeDetails(details), details);
  }
  return parsed.data;
}

function rawJson(body: string, status = 200): Response {
  return new Response(body, { status, headers: { "content-type": "application/json" } });
}

/** Runs a JSON-answering POST under its Idempotency-Key (`key`, when the request has one). */
async function idempotent(
  c: AppContext,
  run: string,
  route: string,
  hash: string,
  key: string | undefined,
  handler: () => Promise<unknown>,
): Promise<Response> {
  if (key === undefined) return c.json(await handler());
  const prior = await findAnswer(c.env.DB, run, key, route, hash);
  if (prior) {
    const replay = rawJson(prior.response, prior.statusCode);
    replay.headers.set("Idempotent-Replayed", "true");
    return replay;
  }
  const response = JSON.stringify(await handler());
  await storeAnswer(c.env.DB, run, key, route, hash, { statusCode: 200, response });
  return rawJson(response);
}

export const atroposRoutes = new Hono<AppEnv>();

atroposRoutes.get("/", (c) => c.json({ message: "AtroposLib API" }));

atroposRoutes.post("/register", async (c) => {
  const run = runOf(c);
  const reg = await jsonBody(c, registrationSchema);
  const { uuid } = await coordinator(c, run).register(run, reg);
  return rawJson(registerResponseJson(uuid));
});

atroposRoutes.post("/register-env", async (c) => {
  const run = runOf(c);
  const body = await jsonBody(c, registerEnvSchema);
  return c.json(await coordinator(c, run).registerEnv(run, body));
});

atroposRoutes.post("/disconnect-env", async (c) => {
  const run = runOf(c);
  const { env_id } = await jsonBody(c, envIdSchema);
  return c.json(unwrapRpc(await coordinator(c, run).disconnectEnv(run, env_id)));
});

atroposRoutes.get("/wandb_info", async (c) => {
  const runRow = await getRun(c.env.DB, runOf(c));
  return c.json({ group: runRow?.wandbGroup ?? null, project: runRow?.wandbProject ?? null });
});

atroposRoutes.get("/info", async (c) => {
  const runRow = await getRun(c.env.DB, runOf(c));
  if (!runRow?.registered) return c.json({ batch_size: -1, max_token_len: -1 });
  return c.json({ batch_size: runRow.batchSize, max_token_len: runRow.maxTokenLen });
});

atroposRoutes.get("/batch", async (c) => {
  const run = runOf(c);
  const outcome = await coordinator(c, run).compatBatch(run);
  if (outcome.kind === "not_registered") {
    return c.json({
      status: "error",
      message: "Trainer not registered. Call /register first.",
      batch: [],
    });
  }
  if (outcome.kind === "none") {
    c.header("X-Atropos-Edge-Reason", outcome.reason.replace(/[^\x20-\x7e]/g, "?"));
    return c.json({ batch: null });
  }
  return new Response(streamGroups(c.env, outcome.groups, '{"batch":[', "]}"), {
    headers: {
      "content-type": "application/json",
      "x-batch-id": outcome.batchId,
      "x-batch-step": String(outcome.step),
    },
  });
});

atroposRoutes.get("/latest_example", async (c) => {
  const run = runOf(c);
  const row = await c.env.DB.prepare(
    `SELECT ${GROUP_REF_COLUMNS} FROM groups
     WHERE run = ?1 AND status <> 'buffered' ORDER BY COALESCE(queued_at, created_at) DESC, id DESC LIMIT 1`,
  )
    .bind(run)
    .first<GroupRefRow>();
  if (!row) {
    return c.json({
      tokens: [],
      masks: [],
      scores: [],
      advantages: [],
      ref_logprobs: [],
      generation_params: [],
      inference_logprobs: [],
      messages: [],
      images: [],
    });
  }
  return rawJson(await canonicalPayload(c.env, groupRef(row)));
});

// Reading, inflating, parsing and validating a body is what holds a whole group in memory, so it
// runs under the isolate's memory budget; the commit that follows (waiting on R2 and D1) holds
// only the stored bytes and a summary, so other bodies can be parsed meanwhile.
atroposRoutes.post("/scored_data", async (c) => {
  const run = runOf(c);
  const timings = c.get("timings");
  const key = validIdempotencyKey(c.req.header("idempotency-key"));
  const { item, hash } = await withMemory(c.env, requestMemoryCost(c.req.raw), async () => {
    const body = await timings.measure("read", () => readBody(c.req.raw, bodyLimits(c)));
    const hash = await timings.measure("hash", () => sha256Hex(body.bytes));
    const json = await timings.measure("parse", () => parseJson(body.bytes));
    const group = await timings.measure("validate", () => validateGroup(json));
    const item: IngestItem = {
      summary: summarizeGroup(group),
      payload: body.gzip ? body.raw : body.bytes,
      encoding: body.gzip ? "gzip" : "identity",
      contentHash: hash,
      dedupeKey: submissionDedupeKey(hash, key, 0),
    };
    return { item, hash };
  });
  return idempotent(c, run, "scored_data", hash, key, async () => {
    const [outcome] = await ingestGroups(c.env, run, [item], timings, keepAliveOf(c));
    // A retry of a stored submission: say so rather than claim a second group.
    if (outcome!.duplicate) return { status: "received", duplicate: true };
    if (outcome!.status !== "buffered") return { status: "received" };
    const { bufferedSequences } = await coordinator(c, run).releaseBuffered(run, outcome!.envId!);
    return { status: "buffered", buffer_size: bufferedSequences };
  });
});

const encoder = new TextEncoder();

atroposRoutes.post("/scored_data_list", async (c) => {
  const run = runOf(c);
  const key = validIdempotencyKey(c.req.header("idempotency-key"));
  const { items, hash } = await withMemory(c.env, requestMemoryCost(c.req.raw), async () => {
    const body = await readBody(c.req.raw, bodyLimits(c));
    const hash = await sha256Hex(body.bytes);
    const groups = validateGroupList(parseJson(body.bytes));
    const items = await Promise.all(
      groups.map(async (group, i): Promise<IngestItem> => {
        const bytes = encoder.encode(JSON.stringify(group));
        return {
          summary: summarizeGroup(group),
          payload: bytes,
          encoding: "identity",
          contentHash: await sha256Hex(bytes),
          dedupeKey: submissionDedupeKey(hash, key, i),
        };
      }),
    );
    return { items, hash };
  });
  return idempotent(c, run, "scored_data_list", hash, key, async () => {
    const outcomes = items.length
      ? await ingestGroups(c.env, run, items, c.get("timings"), keepAliveOf(c))
      : [];
    // The answer counts what this request stored; groups of an earlier copy of it are duplicates.
    const stored = outcomes.filter((o) => !o.duplicate);
    const duplicates = outcomes.length - stored.length;
    const bufferedEnvs = [
      ...new Set(stored.filter((o) => o.status === "buffered").map((o) => o.envId!)),
    ];
    let lastBufferSize = 0;
    for (const envId of bufferedEnvs) {
      lastBufferSize = (await coordinator(c, run).releaseBuffered(run, envId)).bufferedSequences;
    }
    const buffered = stored.filter((o) => o.status === "buffered").length;
    return {
      status: "received",
      groups_processed: stored.length,
      ...(buffered > 0 ? { buffered, last_buffer_size: lastBufferSize } : {}),
      ...(duplicates > 0 ? { duplicates } : {}),
    };
  });
});

atroposRoutes.get("/status", async (c) => {
  const run = runOf(c);
  const [runRow, counts] = await Promise.all([getRun(c.env.DB, run), queueCounts(c.env.DB, run)]);
  const queued = counts.filter((r) => r.status === "queued").reduce((s, r) => s + r.n, 0);
  return c.json({ current_step: runRow?.step ?? 0, queue_size: queued });
});

async function envIdFromRequest(c: AppContext): Promise<number> {
  const query = c.req.query("env_id");
  const raw = query !== undefined ? { env_id: query } : await jsonBodyOrMissing(c);
  const parsed = envIdSchema.safeParse(raw);
  if (!parsed.success) {
    const details = toValidationDetails(parsed.error, raw);
    throw new ApiError("VALIDATION_FAILED", summarizeDetails(details), details);
  }
  return parsed.data.env_id;
}

async function jsonBodyOrMissing(c: AppContext): Promise<unknown> {
  const { bytes } = await readBody(c.req.raw, bodyLimits(c));
  if (bytes.byteLength === 0) {
    throw new ApiError(
      "VALIDATION_FAILED",
      'send the env id as a JSON body {"env_id": N} (Content-Type: application/json) or as ?env_id=N',
      [{ type: "missing", loc: ["body"], msg: "Field required" }],
    );
  }
  return parseJson(bytes);
}

atroposRoutes.get("/status-env", async (c) => {
  const run = runOf(c);
  const envId = await envIdFromRequest(c);
  const found = await statusForEnv(c.env.DB, run, envId);
  if (!found) {
    throw new ApiError(
      "NOT_FOUND",
      `env_id ${envId} is not registered in run '${run}'; register again with /register-env`,
    );
  }
  // Heartbeat, written at most every 5 s per env.
  const now = Date.now();
  c.executionCtx.waitUntil(
    c.env.DB.prepare(
      "UPDATE envs SET last_seen_at = ?3 WHERE run = ?1 AND env_id = ?2 AND last_seen_at < ?3 - 5000",
    )
      .bind(run, envId, now)
      .run(),
  );
  return c.json(found.status);
});

async function resetData(c: AppContext) {
  // A destructive GET must not be triggerable by another site's <img> or fetch.
  const site = c.req.header("sec-fetch-site");
  if (site === "cross-site" || site === "same-site") {
    throw new ApiError("FORBIDDEN", "cross-site requests may not reset data");
  }
  const run = runOf(c);
  await coordinator(c, run).reset(run);
  return c.text("Reset successful");
}
atroposRoutes.get("/reset_data", resetData);
atroposRoutes.post("/reset_data", resetData);
