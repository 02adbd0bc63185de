/**
 * atropos-edge's own API: exactly-once lease/ack delivery, policy versions, observability and
 * env checkpoints. Everything is scoped to a run: /v1/runs/{run}/…
 */
import { Hono } from "hono";
import { z } from "zod";
import {
  ackRequestSchema,
  evalReportSchema,
  leaseRequestSchema,
  policyRequestSchema,
} from "../../core/schemas";
import { APIServerConfigSchema } from "../../core/server-config";
import { numberVar } from "../bindings";
import { parseJson, readBody } from "../body";
import { type AppContext, type AppEnv, coordinator, runOf } from "../context";
import { canonicalPayload, streamGroups } from "../delivery";
import { ApiError, unwrapRpc } from "../errors";
import { type GroupRefRow, groupRef } from "../storage/payloads";
import { envStatus, getRun, listEnvs, queueCounts } from "../storage/runs";
import { jsonBody } from "./atropos";

export const v1Routes = new Hono<AppEnv>();

function intParam(c: AppContext, name: string): number {
  const value = c.req.param(name) ?? "";
  if (!/^\d{1,15}$/.test(value)) {
    throw new ApiError("BAD_REQUEST", `path parameter '${name}' must be a non-negative integer`);
  }
  return Number(value);
}

function queryNumber(c: AppContext, name: string): number | undefined {
  const value = c.req.query(name);
  if (value === undefined || value === "") return undefined;
  const n = Number(value);
  if (!Number.isFinite(n))
    throw new ApiError("BAD_REQUEST", `query parameter '${name}' must be a number`);
  return n;
}

v1Routes.get("/runs", async (c) => {
  const { results } = await c.env.DB.prepare(
    "SELECT name, step, policy_version, batch_size, registered, created_at FROM runs ORDER BY created_at",
  ).all<{
    name: string;
    step: number;
    policy_version: number;
    batch_size: number;
    registered: number;
    created_at: number;
  }>();
  return c.json({ runs: results.map((r) => ({ ...r, registered: r.registered === 1 })) });
});

v1Routes.post("/runs/:run/batches/lease", async (c) => {
  const run = runOf(c);
  const body = await jsonBody(c, leaseRequestSchema, { optional: true });
  const outcome = await coordinator(c, run).lease(run, {
    consumer: "lease",
    leaseSeconds: body.lease_seconds ?? numberVar(c.env.DEFAULT_LEASE_SECONDS, 300),
    maxStaleness: body.max_staleness ?? null,
  });
  if (outcome.kind === "not_registered") {
    throw new ApiError(
      "CONFLICT",
      `run '${run}' has no registered trainer: POST /runs/${run}/register (or /register for the default run) with batch_size first`,
    );
  }
  if (outcome.kind === "none") {
    return new Response(null, {
      status: 204,
      headers: { "X-Atropos-Edge-Reason": outcome.reason.replace(/[^\x20-\x7e]/g, "?") },
    });
  }
  const head = JSON.stringify({
    batch_id: outcome.batchId,
    lease_id: outcome.leaseId,
    step: outcome.step,
    lease_expires_at: outcome.leaseExpiresAt,
    redelivered: outcome.redelivered,
    // Per group, in batch order: what a trainer needs for staleness and bookkeeping, which the
    // Atropos-shaped groups themselves do not carry.
    groups: outcome.groups.map((g) => ({
      group_id: g.id,
      env_id: g.envId,
      policy_version: g.policyVersion,
      num_seqs: g.numSeqs,
    })),
  });
  return new Response(streamGroups(c.env, outcome.groups, `${head.slice(0, -1)},"batch":[`, "]}"), {
    headers: { "content-type": "application/json", "x-batch-id": outcome.batchId },
  });
});

v1Routes.post("/runs/:run/batches/:batchId/ack", async (c) => {
  const run = runOf(c);
  const body = await jsonBody(c, ackRequestSchema, { optional: true });
  const batchId = c.req.param("batchId");
  return c.json(unwrapRpc(await coordinator(c, run).ack(run, batchId, body.lease_id)));
});

v1Routes.post("/runs/:run/policy", async (c) => {
  const run = runOf(c);
  const { version, reset } = await jsonBody(c, policyRequestSchema);
  return c.json(unwrapRpc(await coordinator(c, run).setPolicyVersion(run, version, reset)));
});

v1Routes.get("/runs/:run/policy", async (c) => {
  const runRow = await getRun(c.env.DB, runOf(c));
  return c.json({ policy_version: runRow?.policyVersion ?? 0 });
});

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

v1Routes.get("/runs/:run/stats", async (c) => {
  const run = runOf(c);
  const now = Date.now();
  const windowS = 60;
  const since = now - windowS * 1000;
  const db = c.env.DB;
  const [runRow, envRows, counts, batched] = await Promise.all([
    getRun(db, run),
    listEnvs(db, run),
    queueCounts(db, run),
    db.batch([
      db
        .prepare(
          "SELECT COUNT(*) AS g, COALESCE(SUM(num_seqs), 0) AS s FROM groups WHERE run = ?1 AND created_at > ?2",
        )
        .bind(run, since),
      db
        .prepare(
          "SELECT COUNT(*) AS b, COALESCE(SUM(num_seqs), 0) AS s FROM batches WHERE run = ?1 AND created_at > ?2",
        )
        .bind(run, since),
      db
        .prepare(
          "SELECT created_at FROM groups WHERE run = ?1 AND status = 'queued' ORDER BY id LIMIT 1",
        )
        .bind(run),
      db
        .prepare(
          "SELECT COALESCE(SUM(lease_expires_at > ?2), 0) AS outstanding, COALESCE(SUM(lease_expires_at <= ?2), 0) AS expired FROM batches WHERE run = ?1 AND status = 'leased'",
        )
        .bind(run, now),
      db
        .prepare(
          "SELECT formation_ms FROM batches WHERE run = ?1 AND formation_ms IS NOT NULL ORDER BY created_at DESC LIMIT 200",
        )
        .bind(run),
      db
        .prepare(
          "SELECT env_id, COUNT(*) AS groups, SUM(num_seqs) AS seqs, AVG(score_mean) AS mean_score, SUM(completion_tokens) * 1.0 / SUM(num_seqs) AS mean_completion FROM groups WHERE run = ?1 GROUP BY env_id",
        )
        .bind(run),
      db
        .prepare(
          "SELECT MIN(policy_version) AS lo, MAX(policy_version) AS hi FROM groups WHERE run = ?1 AND status = 'queued'",
        )
        .bind(run),
      db.prepare("SELECT COUNT(*) AS n FROM dead_letters WHERE run = ?1").bind(run),
      db
        .prepare(
          "SELECT id, env_id, error, created_at FROM dead_letters WHERE run = ?1 ORDER BY id DESC LIMIT 10",
        )
        .bind(run),
      db
        .prepare(
          "SELECT env_id, items_in_flight, items_succeeded, items_failed, worker_status FROM worker_stats WHERE run = ?1",
        )
        .bind(run),
    ]),
  ]);
  type Row = Record<string, number | string | null>;
  const rows = (i: number) => (batched[i]?.results ?? []) as Row[];
  const first = (i: number) => rows(i)[0] ?? {};
  const staleSeconds = numberVar(c.env.ENV_STALE_SECONDS, 120);
  const diagnosis = runRow?.registered ? await coordinator(c, run).diagnose(run) : null;

  const byEnv = new Map<number, { groups: number; sequences: number }>();
  let groupsQueued = 0;
  let seqsQueued = 0;
  let groupsBuffered = 0;
  let seqsBuffered = 0;
  for (const r of counts) {
    if (r.status === "buffered") {
      groupsBuffered += r.n;
      seqsBuffered += r.n * r.size;
      continue;
    }
    groupsQueued += r.n;
    seqsQueued += r.n * r.size;
    const e = byEnv.get(r.env_id) ?? { groups: 0, sequences: 0 };
    e.groups += r.n;
    e.sequences += r.n * r.size;
    byEnv.set(r.env_id, e);
  }
  const names = new Map(envRows.map((e) => [e.envId, e.realName]));
  const perEnv = new Map(rows(5).map((r) => [Number(r.env_id ?? -1), r]));
  const workers = new Map(rows(9).map((r) => [Number(r.env_id), r]));
  const formation = rows(4)
    .map((r) => Number(r.formation_ms))
    .sort((a, b) => a - b);
  const oldest = first(2).created_at as number | undefined;
  return c.json({
    run,
    now,
    step: runRow?.step ?? 0,
    policy_version: runRow?.policyVersion ?? 0,
    batch_size: runRow?.batchSize ?? -1,
    max_token_len: runRow?.maxTokenLen ?? -1,
    registered: runRow?.registered ?? false,
    queue: {
      groups: groupsQueued,
      sequences: seqsQueued,
      buffered_groups: groupsBuffered,
      buffered_sequences: seqsBuffered,
      oldest_queued_at: oldest ?? null,
      oldest_queued_age_s: oldest ? (now - oldest) / 1000 : null,
      by_env: [...byEnv.entries()].map(([envId, v]) => ({
        env_id: envId < 0 ? null : envId,
        name: envId < 0 ? null : (names.get(envId) ?? null),
        ...v,
      })),
    },
    leases: {
      outstanding: Number(first(3).outstanding ?? 0),
      expired: Number(first(3).expired ?? 0),
    },
    rates: {
      window_s: windowS,
      ingest_groups_per_s: Number(first(0).g ?? 0) / windowS,
      ingest_sequences_per_s: Number(first(0).s ?? 0) / windowS,
      delivered_batches_per_s: Number(first(1).b ?? 0) / windowS,
      delivered_sequences_per_s: Number(first(1).s ?? 0) / windowS,
    },
    batch_formation: {
      samples: formation.length,
      last_ms: rows(4)[0] ? Number(rows(4)[0]!.formation_ms) : null,
      p50_ms: percentile(formation, 50),
      p99_ms: percentile(formation, 99),
    },
    envs: envRows.map((e) => {
      const s = perEnv.get(e.envId);
      const w = workers.get(e.envId);
      return {
        env_id: e.envId,
        name: e.realName,
        desired_name: e.desiredName,
        group_size: e.groupSize,
        weight: e.weight,
        min_batch_allocation: e.minBatchAllocation,
        max_token_length: e.maxTokenLength,
        connected: e.connected,
        status: envStatus(e, now, staleSeconds),
        heartbeat_age_s: (now - e.lastSeenAt) / 1000,
        groups_submitted: Number(s?.groups ?? 0),
        sequences_submitted: Number(s?.seqs ?? 0),
        mean_score:
          s?.mean_score === null || s?.mean_score === undefined ? null : Number(s.mean_score),
        mean_completion_tokens:
          s?.mean_completion === null || s?.mean_completion === undefined
            ? null
            : Number(s.mean_completion),
        items_in_flight: w ? Number(w.items_in_flight) : null,
        items_succeeded: w ? Number(w.items_succeeded) : null,
        items_failed: w ? Number(w.items_failed) : null,
        // Envs run by an EnvFeeder (queue path) report their own state; others have none.
        worker_status: (w?.worker_status as string | null | undefined) ?? null,
      };
    }),
    dead_letters: { count: Number(first(7).n ?? 0), recent: rows(8) },
    blocked_reason: diagnosis,
    policy_versions: {
      current: runRow?.policyVersion ?? 0,
      queued_min: (first(6).lo as number | null) ?? null,
      queued_max: (first(6).hi as number | null) ?? null,
    },
  });
});

v1Routes.get("/runs/:run/timeseries", async (c) => {
  const run = runOf(c);
  const minutes = Math.min(24 * 60, Math.max(1, queryNumber(c, "minutes") ?? 15));
  const bucketS = Math.min(3600, Math.max(1, Math.round(queryNumber(c, "bucket_s") ?? 10)));
  const bucketMs = bucketS * 1000;
  const since = Date.now() - minutes * 60_000;
  const [ingest, delivered] = await c.env.DB.batch([
    c.env.DB.prepare(
      `SELECT CAST(created_at / ?3 AS INTEGER) * ?3 AS t, COUNT(*) AS g, SUM(num_seqs) AS s, AVG(score_mean) AS m
       FROM groups WHERE run = ?1 AND created_at > ?2 GROUP BY 1 ORDER BY 1`,
    ).bind(run, since, bucketMs),
    c.env.DB.prepare(
      `SELECT CAST(created_at / ?3 AS INTEGER) * ?3 AS t, COUNT(*) AS b, SUM(num_seqs) AS s
       FROM batches WHERE run = ?1 AND created_at > ?2 GROUP BY 1 ORDER BY 1`,
    ).bind(run, since, bucketMs),
  ]);
  const points = new Map<
    number,
    {
      t: number;
      ingest_groups: number;
      ingest_sequences: number;
      delivered_batches: number;
      delivered_sequences: number;
      mean_score: number | null;
    }
  >();
  const point = (t: number) => {
    let p = points.get(t);
    if (!p) {
      p = {
        t,
        ingest_groups: 0,
        ingest_sequences: 0,
        delivered_batches: 0,
        delivered_sequences: 0,
        mean_score: null,
      };
      points.set(t, p);
    }
    return p;
  };
  for (const r of (ingest?.results ?? []) as {
    t: number;
    g: number;
    s: number;
    m: number | null;
  }[]) {
    const p = point(r.t);
    p.ingest_groups = r.g;
    p.ingest_sequences = r.s;
    p.mean_score = r.m;
  }
  for (const r of (delivered?.results ?? []) as { t: number; b: number; s: number }[]) {
    const p = point(r.t);
    p.delivered_batches = r.b;
    p.delivered_sequences = r.s;
  }
  return c.json({ bucket_s: bucketS, points: [...points.values()].sort((a, b) => a.t - b.t) });
});

const GROUP_COLUMNS = `g.id, g.env_id, e.real_name AS env_name, g.status, g.num_seqs, g.total_tokens,
  g.completion_tokens, g.score_mean, g.score_min, g.score_max, g.policy_version, g.created_at,
  g.batch_id, b.step`;
const GROUP_JOINS = `FROM groups g LEFT JOIN envs e ON e.run = g.run AND e.env_id = g.env_id
  LEFT JOIN batches b ON b.id = g.batch_id`;

v1Routes.get("/runs/:run/groups", async (c) => {
  const run = runOf(c);
  const where = ["g.run = ?"];
  const params: (string | number)[] = [run];
  const filters: [string, string][] = [
    ["env_id", "g.env_id = ?"],
    ["min_score", "g.score_mean >= ?"],
    ["max_score", "g.score_mean <= ?"],
    ["policy_version", "g.policy_version = ?"],
    ["since", "g.created_at >= ?"],
    ["until", "g.created_at <= ?"],
    ["cursor", "g.id < ?"],
  ];
  for (const [name, clause] of filters) {
    const v = queryNumber(c, name);
    if (v !== undefined) {
      where.push(clause);
      params.push(v);
    }
  }
  const status = c.req.query("status");
  if (status) {
    if (!["buffered", "queued", "leased", "delivered"].includes(status)) {
      throw new ApiError(
        "BAD_REQUEST",
        "status must be one of buffered, queued, leased, delivered",
      );
    }
    where.push("g.status = ?");
    params.push(status);
  }
  const limit = Math.min(200, Math.max(1, Math.round(queryNumber(c, "limit") ?? 50)));
  const { results } = await c.env.DB.prepare(
    `SELECT ${GROUP_COLUMNS} ${GROUP_JOINS} WHERE ${where.join(" AND ")} ORDER BY g.id DESC LIMIT ${limit + 1}`,
  )
    .bind(...params)
    .all<{ id: number }>();
  const page = results.slice(0, limit);
  return c.json({
    groups: page,
    next_cursor: results.length > limit ? page[page.length - 1]!.id : null,
  });
});

v1Routes.get("/runs/:run/groups/:id", async (c) => {
  const run = runOf(c);
  const id = intParam(c, "id");
  const row = await c.env.DB.prepare(
    `SELECT ${GROUP_COLUMNS}, g.payload_key, g.payload_encoding, g.payload_offset, g.payload_bytes ${GROUP_JOINS} WHERE g.run = ?1 AND g.id = ?2`,
  )
    .bind(run, id)
    .first<Record<string, unknown> & GroupRefRow>();
  if (!row) throw new ApiError("NOT_FOUND", `group ${id} does not exist in run '${run}'`);
  const { payload_key, payload_encoding, payload_offset, payload_bytes, ...meta } = row;
  const payload = await canonicalPayload(c.env, groupRef(row));
  return new Response(`{"group":${JSON.stringify(meta)},"payload":${payload},"token_texts":null}`, {
    headers: { "content-type": "application/json" },
  });
});

v1Routes.get("/runs/:run/batches", async (c) => {
  const run = runOf(c);
  const limit = Math.min(200, Math.max(1, Math.round(queryNumber(c, "limit") ?? 50)));
  const cursor = queryNumber(c, "cursor");
  const { results } = await c.env.DB.prepare(
    `SELECT id AS batch_id, step, status, num_groups, num_seqs, created_at, lease_expires_at, acked_at,
       max_staleness, policy_version AS policy_version_at_formation, group_ids
     FROM batches WHERE run = ?1 AND step < ?2 ORDER BY step DESC LIMIT ?3`,
  )
    .bind(run, cursor ?? Number.MAX_SAFE_INTEGER, limit + 1)
    .all<Record<string, unknown> & { group_ids: string; step: number }>();
  const page = results.slice(0, limit);
  const allIds = page.flatMap((b) => JSON.parse(b.group_ids) as number[]);
  const { results: groupRows } = await c.env.DB.prepare(
    "SELECT id, env_id, policy_version, num_seqs FROM groups WHERE id IN (SELECT value FROM json_each(?1))",
  )
    .bind(JSON.stringify(allIds))
    .all<{ id: number; env_id: number | null; policy_version: number; num_seqs: number }>();
  const byId = new Map(groupRows.map((g) => [g.id, g]));
  return c.json({
    batches: page.map(({ group_ids, ...b }) => ({
      ...b,
      groups: (JSON.parse(group_ids) as number[]).map(
        (id) => byId.get(id) ?? { id, env_id: null, policy_version: null, num_seqs: null },
      ),
    })),
    next_cursor: results.length > limit ? page[page.length - 1]!.step : null,
  });
});

v1Routes.get("/runs/:run/envs/:envId/scores", async (c) => {
  const run = runOf(c);
  const envId = intParam(c, "envId");
  const bins = Math.min(100, Math.max(1, Math.round(queryNumber(c, "bins") ?? 20)));
  const { results } = await c.env.DB.prepare(
    "SELECT scores_json FROM groups WHERE run = ?1 AND env_id = ?2 ORDER BY id DESC LIMIT 500",
  )
    .bind(run, envId)
    .all<{ scores_json: string }>();
  const scores = results.flatMap((r) => JSON.parse(r.scores_json) as number[]);
  if (scores.length === 0) return c.json({ bins: [], samples: 0 });
  const lo = Math.min(...scores);
  const hi = Math.max(...scores);
  const width = hi > lo ? (hi - lo) / bins : 1;
  const histogram = Array.from({ length: hi > lo ? bins : 1 }, (_, i) => ({
    lo: lo + i * width,
    hi: hi > lo ? lo + (i + 1) * width : hi,
    count: 0,
  }));
  for (const s of scores) {
    const i = hi > lo ? Math.min(bins - 1, Math.floor((s - lo) / width)) : 0;
    histogram[i]!.count++;
  }
  return c.json({ bins: histogram, samples: scores.length });
});

v1Routes.get("/runs/:run/envs/:envId/evals", async (c) => {
  const run = runOf(c);
  const envId = intParam(c, "envId");
  const { results } = await c.env.DB.prepare(
    "SELECT step, metrics, created_at FROM evals WHERE run = ?1 AND env_id = ?2 ORDER BY step",
  )
    .bind(run, envId)
    .all<{ step: number; metrics: string; created_at: number }>();
  return c.json({ evals: results.map((r) => ({ ...r, metrics: JSON.parse(r.metrics) })) });
});

v1Routes.post("/runs/:run/envs/:envId/evals", async (c) => {
  const run = runOf(c);
  const envId = intParam(c, "envId");
  const body = await jsonBody(c, evalReportSchema);
  await c.env.DB.prepare(
    `INSERT INTO evals (run, env_id, step, metrics, created_at) VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT (run, env_id, step) DO UPDATE SET metrics = excluded.metrics, created_at = excluded.created_at`,
  )
    .bind(run, envId, body.step, JSON.stringify(body.metrics), Date.now())
    .run();
  return c.json({ status: "stored", step: body.step });
});

function envSession(c: AppContext, run: string, envId: number) {
  return c.env.ENV_SESSION.get(c.env.ENV_SESSION.idFromName(`${run}/${envId}`));
}

const MAX_CHECKPOINT_BYTES = 1024 * 1024;

v1Routes.put("/runs/:run/envs/:envId/checkpoints/:step", async (c) => {
  const run = runOf(c);
  const envId = intParam(c, "envId");
  const step = intParam(c, "step");
  const { bytes } = await readBody(c.req.raw, {
    maxBodyBytes: MAX_CHECKPOINT_BYTES,
    maxInflatedBytes: MAX_CHECKPOINT_BYTES,
  });
  const state = parseJson(bytes);
  if (state === null || typeof state !== "object") {
    throw new ApiError("VALIDATION_FAILED", "checkpoint state must be a JSON object", [
      { type: "dict_type", loc: ["body"], msg: "Input should be a valid dictionary" },
    ]);
  }
  const envExists = await c.env.DB.prepare("SELECT 1 FROM envs WHERE run = ?1 AND env_id = ?2")
    .bind(run, envId)
    .first();
  if (!envExists)
    throw new ApiError("NOT_FOUND", `env_id ${envId} is not registered in run '${run}'`);
  const saved = await envSession(c, run, envId).saveCheckpoint(step, JSON.stringify(state));
  return c.json({ status: "saved", step: saved.step, saved_at: saved.saved_at });
});

v1Routes.get("/runs/:run/envs/:envId/checkpoints", async (c) => {
  const run = runOf(c);
  return c.json({ checkpoints: await envSession(c, run, intParam(c, "envId")).listCheckpoints() });
});

v1Routes.get("/runs/:run/envs/:envId/checkpoints/:step", async (c) => {
  const run = runOf(c);
  const envId = intParam(c, "envId");
  const stepParam = c.req.param("step");
  const step = stepParam === "latest" ? null : intParam(c, "step");
  const found = await envSession(c, run, envId).loadCheckpoint(step);
  if (!found) {
    throw new ApiError(
      "NOT_FOUND",
      step === null
        ? `env ${envId} has no checkpoint yet`
        : `env ${envId} has no checkpoint at or before step ${step}`,
    );
  }
  return c.json(found);
});

function envFeeder(c: AppContext, name: string) {
  return c.env.ENV_FEEDER.get(c.env.ENV_FEEDER.idFromName(name));
}

const envWorkerSchema = z.object({
  env: z.string().min(1),
  instance: z
    .string()
    .regex(/^[\w.-]{1,64}$/)
    .default("0"),
  config: z.record(z.string(), z.unknown()).default({}),
  inference: z.array(APIServerConfigSchema).min(1, "give at least one inference server"),
});

v1Routes.post("/runs/:run/env-workers", async (c) => {
  const run = runOf(c);
  const body = await jsonBody(c, envWorkerSchema);
  const name = `${run}/${body.env}/${body.instance}`;
  try {
    const state = await envFeeder(c, name).start(run, name, {
      envName: body.env,
      config: body.config,
      inference: body.inference,
    });
    return c.json(state);
  } catch (error) {
    // The feeder checks the env against the envs this Worker registers, then its config,
    // before it stores anything.
    const message = error instanceof Error ? error.message : String(error);
    if (message.startsWith("unknown env")) {
      throw new ApiError("VALIDATION_FAILED", message, [
        { type: "value_error", loc: ["body", "env"], msg: "unknown env" },
      ]);
    }
    if (message.startsWith("invalid env config")) {
      throw new ApiError("VALIDATION_FAILED", message, [
        { type: "value_error", loc: ["body", "config"], msg: "invalid env config" },
      ]);
    }
    throw error;
  }
});

v1Routes.get("/runs/:run/env-workers/:env/:instance", async (c) => {
  const run = runOf(c);
  const state = await envFeeder(
    c,
    `${run}/${c.req.param("env")}/${c.req.param("instance")}`,
  ).describe();
  if (!state) throw new ApiError("NOT_FOUND", "no such env worker");
  return c.json(state);
});

v1Routes.post("/runs/:run/env-workers/:env/:instance/stop", async (c) => {
  const run = runOf(c);
  const state = await envFeeder(
    c,
    `${run}/${c.req.param("env")}/${c.req.param("instance")}`,
  ).stop();
  if (!state) throw new ApiError("NOT_FOUND", "no such env worker");
  return c.json({ status: state.status });
});
