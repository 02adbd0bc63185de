/**
 * The metrics store: every value charted or exported per step, read through the `metric_values`
 * view (drizzle/0020) over two tables (schema/training.ts):
 * - "train": statistics of each batch, computed by the API in the statement that forms it, one
 *   `batch_statistics` row per (step, env); values a trainer reports go to `metrics`;
 * - "env": what envs report (observe()/metrics(), drop counts by reason, curriculum level);
 * - "eval": evaluation results.
 */
import { sql } from "drizzle-orm";
import { z } from "zod";
import { type MetricKind, type MetricSeries, metricKindSchema } from "../../core/wire/api-schemas";
import { compiledSql } from "./compiled";
import { allRows } from "./rows";

/** Env id of run-wide values (throughput). */
export const RUN_WIDE = -1;

export interface MetricValues {
  run: string;
  envId: number;
  step: number;
  kind: MetricKind;
  values: Record<string, number>;
  /** Default: the run's policy version now. */
  policyVersion?: number | null;
  now?: number;
}

/**
 * Stores values for one (env, step, kind); a value already stored under the same name replaces
 * it (reports are retried). Non-finite values are skipped: a chart cannot draw them.
 */
export function recordMetricsStatement(d1: D1Database, m: MetricValues): D1PreparedStatement {
  const finite = Object.fromEntries(
    Object.entries(m.values).filter(([, v]) => typeof v === "number" && Number.isFinite(v)),
  );
  return d1
    .prepare(
      `INSERT INTO metrics (run, name, env_id, step, policy_version, value, kind, created_at)
       SELECT ?1, j.key, ?2, ?3, COALESCE(?4, (SELECT policy_version FROM runs WHERE name = ?1)),
         j.value, ?5, ?6
       FROM json_each(?7) AS j WHERE true
       ON CONFLICT (run, name, env_id, step, kind) DO UPDATE SET value = excluded.value,
         policy_version = excluded.policy_version, created_at = excluded.created_at`,
    )
    .bind(
      m.run,
      m.envId,
      m.step,
      m.policyVersion ?? null,
      m.kind,
      m.now ?? Date.now(),
      JSON.stringify(finite),
    );
}

export async function recordMetrics(d1: D1Database, m: MetricValues): Promise<number> {
  const result = await recordMetricsStatement(d1, m).run();
  return result.meta.changes ?? 0;
}

/** Names of the per-env statistics of each batch (kind "train"). */
export const BATCH_STATISTICS = [
  "train/score_mean",
  "train/score_std",
  "train/score_min",
  "train/score_max",
  "train/percent_correct",
  "train/completion_lengths",
  "train/groups",
  "train/sequences",
  "train/staleness_mean",
  "train/staleness_max",
] as const;

/** Run-wide statistics of each batch (env id RUN_WIDE, kind "train"). */
export const RUN_WIDE_BATCH_STATISTICS = [
  "train/sequences_per_s",
  "train/ingest_groups",
  "train/ingest_sequences",
] as const;

/**
 * Buckets of each batch's per-env score histogram, stored as `train/score_hist/00` … `/19`:
 * equal widths between that step's train/score_min and train/score_max (one bucket when they
 * are equal); empty buckets are not stored.
 */
export const SCORE_HISTOGRAM_BUCKETS = 20;
export const SCORE_HISTOGRAM_PREFIX = "train/score_hist/";

/** The values `recordBatchStatistics` binds. */
export interface BatchStatistics {
  run: string;
  step: number;
  /** The run's policy version when the batch was formed: staleness is measured against it. */
  policyVersion: number;
  /** JSON array of the batch's group ids. */
  ids: string;
  sequences: number;
  now: number;
  /** The batch's id: "the previous batch" is the latest other one. */
  batchId: string;
}

const b = {
  run: sql.placeholder("run"),
  step: sql.placeholder("step"),
  policyVersion: sql.placeholder("policyVersion"),
  groupIdsJson: sql.placeholder("ids"),
  sequences: sql.placeholder("sequences"),
  now: sql.placeholder("now"),
  batchId: sql.placeholder("batchId"),
};

/**
 * Per-step statistics of a batch being formed, per env: score mean/std/min/max over its
 * sequences, percent_correct (share of sequences scoring above 0), completion length, groups,
 * sequences, staleness and the score histogram (SCORE_HISTOGRAM_BUCKETS); run-wide: sequences per
 * second since the previous batch, and the groups and sequences stored since then (ingest).
 * One statement, so it joins a batch-forming D1 batch (before or after the batch's own INSERT:
 * "the previous batch" is the latest other one). It writes one `batch_statistics` row per env (and
 * one run-wide), each value under its name in a JSON object. Bound with `BatchStatistics`.
 */
export const recordBatchStatistics = compiledSql(() => {
  const runWide = sql.raw(String(RUN_WIDE));
  const statisticNames = sql.raw(`'${JSON.stringify(BATCH_STATISTICS)}'`);
  const runWideNames = sql.raw(`'${JSON.stringify(RUN_WIDE_BATCH_STATISTICS)}'`);
  const histogramPrefix = sql.raw(`'${SCORE_HISTOGRAM_PREFIX}'`);
  const buckets = sql.raw(String(SCORE_HISTOGRAM_BUCKETS));
  return sql`INSERT OR REPLACE INTO batch_statistics (run, step, env_id, policy_version, created_at, statistics)
       WITH g AS (
         SELECT COALESCE(env_id, ${runWide}) AS env_id, num_seqs, completion_tokens, policy_version,
           scores_json FROM groups WHERE id IN (SELECT value FROM json_each(${b.groupIdsJson}))
       ),
       s AS (SELECT g.env_id, CAST(j.value AS REAL) AS x FROM g, json_each(g.scores_json) AS j),
       by_env AS (
         SELECT env_id, COUNT(*) AS groups, SUM(num_seqs) AS seqs,
           SUM(completion_tokens) * 1.0 / SUM(num_seqs) AS completion,
           AVG(${b.policyVersion} - policy_version) AS stale_mean, MAX(${b.policyVersion} - policy_version) AS stale_max
         FROM g GROUP BY env_id
       ),
       score AS (
         SELECT env_id, AVG(x) AS mean, AVG(x * x) - AVG(x) * AVG(x) AS var, MIN(x) AS lo,
           MAX(x) AS hi, AVG(x > 0) AS correct
         FROM s GROUP BY env_id
       ),
       wide AS (SELECT * FROM by_env LEFT JOIN score USING (env_id)),
       -- One row per (env, name): D1 caps compound SELECTs, so the columns are unpivoted by a join.
       v(env_id, name, value) AS (
         SELECT w.env_id, n.value, CASE n.value
           WHEN 'train/score_mean' THEN w.mean
           WHEN 'train/score_std' THEN sqrt(max(w.var, 0))
           WHEN 'train/score_min' THEN w.lo
           WHEN 'train/score_max' THEN w.hi
           WHEN 'train/percent_correct' THEN w.correct
           WHEN 'train/completion_lengths' THEN w.completion
           WHEN 'train/groups' THEN w.groups
           WHEN 'train/sequences' THEN w.seqs
           WHEN 'train/staleness_mean' THEN w.stale_mean
           WHEN 'train/staleness_max' THEN w.stale_max END
         FROM wide AS w, json_each(${statisticNames}) AS n
         UNION ALL SELECT ${runWide}, n.value, CASE n.value
           WHEN 'train/sequences_per_s' THEN
             CASE WHEN p.latest < ${b.now} THEN ${b.sequences} * 1000.0 / (${b.now} - p.latest) END
           WHEN 'train/ingest_groups' THEN (SELECT COUNT(*) FROM groups
             WHERE run = ${b.run} AND created_at > COALESCE(p.latest, 0) AND created_at <= ${b.now})
           WHEN 'train/ingest_sequences' THEN (SELECT COALESCE(SUM(num_seqs), 0) FROM groups
             WHERE run = ${b.run} AND created_at > COALESCE(p.latest, 0) AND created_at <= ${b.now}) END
           -- The batch itself is left out: with a deferred lease (lease-writes.ts) its row is there already.
           FROM (SELECT MAX(created_at) AS latest FROM (SELECT created_at FROM batches
             WHERE run = ${b.run} AND id <> ${b.batchId} ORDER BY created_at DESC LIMIT 1)) AS p,
             json_each(${runWideNames}) AS n
         UNION ALL SELECT env_id, ${histogramPrefix} || printf('%02d', bucket), COUNT(*) FROM (
           SELECT s.env_id, CASE WHEN score.hi > score.lo
             THEN min(${buckets} - 1, CAST((s.x - score.lo) * ${buckets} / (score.hi - score.lo) AS INTEGER))
             ELSE 0 END AS bucket
           FROM s JOIN score USING (env_id)
         ) GROUP BY env_id, bucket
       )
       -- Reals as 17 significant digits (SQLite's JSON writes 15, which loses the last bits);
       -- infinities left out, as recordMetrics leaves them: a chart cannot draw them.
       SELECT ${b.run}, ${b.step}, env_id, ${b.policyVersion}, ${b.now}, json_group_object(name,
         CASE WHEN typeof(value) = 'integer' THEN value ELSE json(printf('%!.17g', value)) END)
       FROM v WHERE abs(value) <= 1.7976931348623157e308 GROUP BY env_id`;
});

export interface MetricFilter {
  /** Exact names; a name ending in `*` matches that prefix. Empty: every name. */
  names?: string[];
  envId?: number;
  kind?: MetricKind;
  fromStep?: number;
  toStep?: number;
  limit: number;
}

const metricRow = z.object({
  name: z.string(),
  env_id: z.number(),
  step: z.number(),
  policy_version: z.number().nullable(),
  value: z.number(),
  kind: metricKindSchema,
});
const evalRow = z.object({
  step: z.number(),
  env_id: z.number(),
  name: z.string(),
  value: z.number(),
  policy_version: z.number().nullable(),
  created_at: z.number(),
});
/** A batch_statistics row's values: metric name → number. */
const statisticsValues = z.record(z.string(), z.number());

/** One env's evaluation value at a step (evaluationMetricOverSteps). */
const evalPointRow = evalRow.pick({ step: true, env_id: true, value: true, policy_version: true });
export type EvalPoint = z.infer<typeof evalPointRow>;

/** Values matching `filter`, as one series per (name, env, kind), steps ascending. */
export async function queryMetrics(
  d1: D1Database,
  run: string,
  filter: MetricFilter,
): Promise<{ series: MetricSeries[]; truncated: boolean }> {
  const where = ["run = ?1"];
  const binds: (string | number)[] = [run];
  const bind = (v: string | number) => {
    binds.push(v);
    return `?${binds.length}`;
  };
  const names = filter.names ?? [];
  if (names.length > 0) {
    const clauses = names.map((n) =>
      n.endsWith("*")
        ? `substr(name, 1, ${n.length - 1}) = ${bind(n.slice(0, -1))}`
        : `name = ${bind(n)}`,
    );
    where.push(`(${clauses.join(" OR ")})`);
  }
  if (filter.envId !== undefined) where.push(`env_id = ${bind(filter.envId)}`);
  if (filter.kind !== undefined) where.push(`kind = ${bind(filter.kind)}`);
  if (filter.fromStep !== undefined) where.push(`step >= ${bind(filter.fromStep)}`);
  if (filter.toStep !== undefined) where.push(`step <= ${bind(filter.toStep)}`);
  const results = await allRows(
    d1
      .prepare(
        `SELECT name, env_id, step, policy_version, value, kind FROM metric_values WHERE ${where.join(" AND ")}
       ORDER BY name, env_id, kind, step LIMIT ${bind(filter.limit + 1)}`,
      )
      .bind(...binds),
    metricRow,
  );
  const truncated = results.length > filter.limit;
  const series = new Map<string, MetricSeries>();
  for (const r of results.slice(0, filter.limit)) {
    const key = `${r.kind}\u0000${r.env_id}\u0000${r.name}`;
    let s = series.get(key);
    if (!s) {
      s = {
        name: r.name,
        env_id: r.env_id === RUN_WIDE ? null : r.env_id,
        kind: r.kind,
        steps: [],
        values: [],
        policy_versions: [],
      };
      series.set(key, s);
    }
    s.steps.push(r.step);
    s.values.push(r.value);
    s.policy_versions.push(r.policy_version);
  }
  return { series: [...series.values()], truncated };
}

/** Evaluation results of an env, one record per step with every metric of that step. */
export async function evaluationsByStep(
  d1: D1Database,
  run: string,
  envId: number,
): Promise<{ step: number; metrics: Record<string, number>; created_at: number }[]> {
  const results = await allRows(
    d1
      .prepare(
        `SELECT step, name, value, created_at FROM metrics
       WHERE run = ?1 AND env_id = ?2 AND kind = 'eval' ORDER BY step, name`,
      )
      .bind(run, envId),
    evalRow.pick({ step: true, name: true, value: true, created_at: true }),
  );
  const bySteps = new Map<
    number,
    { step: number; metrics: Record<string, number>; created_at: number }
  >();
  for (const r of results) {
    const e = bySteps.get(r.step) ?? { step: r.step, metrics: {}, created_at: r.created_at };
    e.metrics[r.name] = r.value;
    e.created_at = Math.max(e.created_at, r.created_at);
    bySteps.set(r.step, e);
  }
  return [...bySteps.values()];
}

/**
 * One evaluation metric over steps (for regression guards and curricula): every env's value of
 * `name` at each evaluated step, steps ascending; `envId` narrows it to one env.
 */
export async function evaluationMetricOverSteps(
  d1: D1Database,
  run: string,
  name: string,
  envId?: number,
): Promise<EvalPoint[]> {
  const results = await allRows(
    d1
      .prepare(
        `SELECT step, env_id, value, policy_version FROM metrics
       WHERE run = ?1 AND name = ?2 AND kind = 'eval' AND (?3 IS NULL OR env_id = ?3)
       ORDER BY step, env_id`,
      )
      .bind(run, name, envId ?? null),
    evalPointRow,
  );
  return results;
}

/** The evaluation metrics an env reported for one step (kind "eval"), or null when none. */
export async function evaluationAtStep(
  d1: D1Database,
  run: string,
  envId: number,
  step: number,
): Promise<Record<string, number> | null> {
  const results = await allRows(
    d1
      .prepare(
        "SELECT name, value FROM metrics WHERE run = ?1 AND env_id = ?2 AND step = ?3 AND kind = 'eval'",
      )
      .bind(run, envId, step),
    evalRow.pick({ name: true, value: true }),
  );
  return results.length > 0 ? Object.fromEntries(results.map((r) => [r.name, r.value])) : null;
}

const timelinePoint = z.object({
  t: z.number(),
  ingest_groups: z.number(),
  ingest_sequences: z.number(),
  delivered_batches: z.number(),
  delivered_sequences: z.number(),
  mean_score: z.number().nullable(),
});
export type TimelinePoint = z.infer<typeof timelinePoint>;

/**
 * The batch statistics per wall-clock bucket of the time their batch was formed: batches and
 * sequences delivered, groups and sequences stored since the batch before (so ingest shows when
 * the next batch forms), and the mean of the envs' mean scores. Buckets without a batch are left
 * out.
 */
export async function batchStatisticsOverTime(
  d1: D1Database,
  run: string,
  since: number,
  bucketMs: number,
): Promise<TimelinePoint[]> {
  const results = await allRows(
    d1
      .prepare(
        `SELECT CAST(created_at / ?3 AS INTEGER) * ?3 AS t,
         COUNT(DISTINCT CASE WHEN name = 'train/sequences' THEN step END) AS delivered_batches,
         COALESCE(SUM(CASE WHEN name = 'train/sequences' THEN value END), 0) AS delivered_sequences,
         COALESCE(SUM(CASE WHEN name = 'train/ingest_groups' THEN value END), 0) AS ingest_groups,
         COALESCE(SUM(CASE WHEN name = 'train/ingest_sequences' THEN value END), 0) AS ingest_sequences,
         AVG(CASE WHEN name = 'train/score_mean' THEN value END) AS mean_score
       FROM metric_values WHERE run = ?1 AND kind = 'train' AND created_at > ?2
         AND name IN ('train/sequences', 'train/ingest_groups', 'train/ingest_sequences', 'train/score_mean')
       GROUP BY 1 ORDER BY 1`,
      )
      .bind(run, since, bucketMs),
    timelinePoint,
  );
  return results;
}

export interface ScoreHistogramAtStep {
  step: number | null;
  samples: number;
  bins: { lo: number; hi: number; count: number }[];
}

/**
 * The score histogram of an env's latest batch (its `train/score_hist/*` buckets, with edges
 * from that step's train/score_min and train/score_max); empty before the env's first batch.
 */
export async function latestScoreHistogram(
  d1: D1Database,
  run: string,
  envId: number,
): Promise<ScoreHistogramAtStep> {
  const latest = await d1
    .prepare(
      `SELECT step, statistics FROM batch_statistics
       WHERE run = ?1 AND env_id = ?2 AND json_type(statistics, '$."train/score_min"') IS NOT NULL
       ORDER BY step DESC LIMIT 1`,
    )
    .bind(run, envId)
    .first<{ step: number; statistics: string }>();
  if (!latest) return { step: null, samples: 0, bins: [] };
  const values = statisticsValues.parse(JSON.parse(latest.statistics));
  const lo = values["train/score_min"];
  const hi = values["train/score_max"];
  if (lo === undefined || hi === undefined) return { step: null, samples: 0, bins: [] };
  const count = (i: number) =>
    values[`${SCORE_HISTOGRAM_PREFIX}${String(i).padStart(2, "0")}`] ?? 0;
  if (!(hi > lo))
    return { step: latest.step, samples: count(0), bins: [{ lo, hi, count: count(0) }] };
  const width = (hi - lo) / SCORE_HISTOGRAM_BUCKETS;
  const bins = Array.from({ length: SCORE_HISTOGRAM_BUCKETS }, (_, i) => ({
    lo: lo + i * width,
    hi: i === SCORE_HISTOGRAM_BUCKETS - 1 ? hi : lo + (i + 1) * width,
    count: count(i),
  }));
  return { step: latest.step, samples: bins.reduce((n, b) => n + b.count, 0), bins };
}
