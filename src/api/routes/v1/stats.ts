import { type RunStats, runStatsSchema, type WorkerStatus } from "../../../core/api-schemas";
import { numberVar } from "../../bindings";
import { coordinator, runOf } from "../../context";
import { ownGroupsOnly } from "../../middleware/auth";
import { retentionMs } from "../../retention";
import { envStatus, getRun, listEnvs, queueCounts } from "../../storage/runs";
import { staleCount } from "../../storage/staleness";
import { defineRoute, jsonContent, runParams } from "../define";

interface GroupTotals {
  groups: number;
  seqs: number;
  scoreSum: number;
  /** Groups with a mean score (the mean of means counts only those). */
  scored: number;
  completion: number;
  bytes: number;
  delivered: number;
}

/** Adds up per-(env, token) group totals by `key`, in first-seen order. */
function sumBy<K>(
  rows: Record<string, number | string | null>[],
  key: (row: Record<string, number | string | null>) => K,
): Map<K, GroupTotals> {
  const sums = new Map<K, GroupTotals>();
  for (const r of rows) {
    const k = key(r);
    const t = sums.get(k) ?? {
      groups: 0,
      seqs: 0,
      scoreSum: 0,
      scored: 0,
      completion: 0,
      bytes: 0,
      delivered: 0,
    };
    t.groups += Number(r.groups ?? 0);
    t.seqs += Number(r.seqs ?? 0);
    t.scoreSum += Number(r.score_sum ?? 0);
    t.scored += Number(r.scored ?? 0);
    t.completion += Number(r.completion ?? 0);
    t.bytes += Number(r.bytes ?? 0);
    t.delivered += Number(r.delivered ?? 0);
    sums.set(k, t);
  }
  return sums;
}

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export const stats = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/stats",
    "x-scope": "read",
    "x-contributor-own": true,
    summary: "Run statistics",
    description:
      "Queue depth, rates over the last minute, leases, envs, dead letters and why no batch can be formed (if none can).",
    request: { params: runParams },
    responses: {
      200: { description: "The run's statistics.", content: jsonContent(runStatsSchema) },
    },
  },
  async (c) => {
    const run = runOf(c);
    const now = Date.now();
    const windowS = 60;
    const since = now - windowS * 1000;
    const db = c.env.DB;
    const [runRow, envRows, counts, stale, batched] = await Promise.all([
      getRun(db, run),
      listEnvs(db, run),
      queueCounts(db, run),
      staleCount(db, run),
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
            // One pass over the run's groups serves the per-env and the per-token totals.
            `SELECT env_id, token_id, COUNT(*) AS groups, SUM(num_seqs) AS seqs,
               SUM(score_mean) AS score_sum, COUNT(score_mean) AS scored,
               SUM(completion_tokens) AS completion, COALESCE(SUM(payload_bytes), 0) AS bytes,
               COALESCE(SUM(status = 'delivered'), 0) AS delivered
             FROM groups WHERE run = ?1 GROUP BY env_id, token_id`,
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
    // What the diagnosis depends on besides the coordinator's own changes: it is reused while
    // these stay the same.
    const diagnosisKey = JSON.stringify([
      runRow?.batchSize,
      counts,
      envRows.map((e) => [e.envId, e.minBatchAllocation, envStatus(e, now, staleSeconds)]),
    ]);
    const diagnosis = runRow?.registered
      ? await coordinator(c, run).diagnose(run, diagnosisKey)
      : null;

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
    const perEnv = sumBy(rows(5), (r) => Number(r.env_id ?? -1));
    const workers = new Map(rows(9).map((r) => [Number(r.env_id), r]));
    const formation = rows(4)
      .map((r) => Number(r.formation_ms))
      .sort((a, b) => a - b);
    const oldest = first(2).created_at as number | undefined;
    const byToken = [...sumBy(rows(5), (r) => (r.token_id as string | null) ?? null)];
    const total = (field: keyof GroupTotals) =>
      byToken.reduce((sum, [, totals]) => sum + totals[field], 0);
    const own = ownGroupsOnly(c);
    const retention = retentionMs(c.env);
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
        stale_groups: stale,
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
          paused: e.paused,
          status: envStatus(e, now, staleSeconds),
          heartbeat_age_s: (now - e.lastSeenAt) / 1000,
          groups_submitted: s?.groups ?? 0,
          sequences_submitted: s?.seqs ?? 0,
          mean_score: s && s.scored > 0 ? s.scoreSum / s.scored : null,
          mean_completion_tokens: s && s.seqs > 0 ? s.completion / s.seqs : null,
          items_in_flight: w ? Number(w.items_in_flight) : null,
          items_succeeded: w ? Number(w.items_succeeded) : null,
          items_failed: w ? Number(w.items_failed) : null,
          // Envs run by an EnvFeeder (queue path) report their own state; others have none.
          worker_status: (w?.worker_status as WorkerStatus | null | undefined) ?? null,
        };
      }),
      dead_letters: {
        count: Number(first(7).n ?? 0),
        recent: rows(8) as unknown as RunStats["dead_letters"]["recent"],
      },
      blocked_reason: diagnosis,
      policy_versions: {
        current: runRow?.policyVersion ?? 0,
        queued_min: (first(6).lo as number | null) ?? null,
        queued_max: (first(6).hi as number | null) ?? null,
      },
      retention: {
        hours: retention === null ? null : retention / 3_600_000,
        kept_groups: total("groups"),
        kept_bytes: total("bytes"),
        delivered_groups: total("delivered"),
      },
      by_token: byToken
        .filter(([tokenId]) => own === null || tokenId === own)
        .map(([tokenId, totals]) => ({
          token_id: tokenId,
          groups: totals.groups,
          bytes: totals.bytes,
        })),
    } satisfies RunStats);
  },
);
