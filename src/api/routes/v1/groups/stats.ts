import {
  type RunStats,
  runStatsSchema,
  type WorkerStatus,
} from "../../../../core/wire/api-schemas";
import { coordinator, runOf } from "../../../context";
import { ownGroupsOnly } from "../../../middleware/auth";
import { retentionMs } from "../../../retention";
import { settingsOf } from "../../../settings";
import { type GroupTotalsRow, runActivity } from "../../../storage/run-stats";
import { envStatus, getRun, listEnvs, queueCounts } from "../../../storage/runs";
import { staleCount } from "../../../storage/staleness";
import { defineRoute, jsonContent, runParams } from "../../define";

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
function sumBy<K>(rows: GroupTotalsRow[], key: (row: GroupTotalsRow) => K): Map<K, GroupTotals> {
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
    t.scoreSum += Number(r.scoreSum ?? 0);
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
    const [runRow, envRows, counts, stale, activity] = await Promise.all([
      getRun(db, run),
      listEnvs(db, run),
      queueCounts(db, run),
      staleCount(db, run),
      runActivity(db, run, now, since),
    ]);
    const staleSeconds = settingsOf(c.env).ENV_STALE_SECONDS;
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
    const perEnv = sumBy(activity.groupTotals, (r) => r.envId ?? -1);
    const workers = new Map(activity.workers.map((r) => [r.envId, r]));
    const formation = [...activity.formationMs].sort((a, b) => a - b);
    const oldest = activity.oldestQueuedAt;
    const byToken = [...sumBy(activity.groupTotals, (r) => r.tokenId)];
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
        outstanding: Number(activity.leases.outstanding ?? 0),
        expired: Number(activity.leases.expired ?? 0),
      },
      rates: {
        window_s: windowS,
        ingest_groups_per_s: Number(activity.ingested.groups ?? 0) / windowS,
        ingest_sequences_per_s: Number(activity.ingested.seqs ?? 0) / windowS,
        delivered_batches_per_s: Number(activity.delivered.batches ?? 0) / windowS,
        delivered_sequences_per_s: Number(activity.delivered.seqs ?? 0) / windowS,
      },
      batch_formation: {
        samples: formation.length,
        last_ms: activity.formationMs[0] ?? null,
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
          items_in_flight: w ? w.itemsInFlight : null,
          items_succeeded: w ? w.itemsSucceeded : null,
          items_failed: w ? w.itemsFailed : null,
          // Envs run by an EnvFeeder (queue path) report their own state; others have none.
          worker_status: (w?.workerStatus as WorkerStatus | null | undefined) ?? null,
        };
      }),
      dead_letters: {
        count: activity.deadLetters,
        recent: activity.recentDeadLetters,
      },
      blocked_reason: diagnosis,
      policy_versions: {
        current: runRow?.policyVersion ?? 0,
        queued_min: activity.queuedPolicyVersions.lo ?? null,
        queued_max: activity.queuedPolicyVersions.hi ?? null,
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
