/**
 * The metrics store: per-step batch statistics computed when a batch is formed, env-reported
 * values and evaluation results, all read back through GET /v1/runs/{run}/metrics (and the
 * /evals view), on local D1 through the real Worker entry.
 */

import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { evaluationMetricOverSteps } from "../../src/api/storage/metrics";
import { advanceClock, resetClock } from "../../src/core/concurrency/clock";
import type { MetricSeries, MetricsResponse } from "../../src/core/wire/api-schemas";
import { call, group, json, post, setupRun, uniqueRun } from "./helpers";

const bindings = env as unknown as Bindings;

async function metrics(run: string, query = ""): Promise<MetricsResponse> {
  const res = await call(`/v1/runs/${run}/metrics${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as MetricsResponse;
}

function find(series: MetricSeries[], name: string, envId: number | null): MetricSeries {
  const s = series.find((x) => x.name === name && x.env_id === envId);
  if (!s) throw new Error(`no series ${name} for env ${envId}: ${series.map((x) => x.name)}`);
  return s;
}

async function lease(run: string) {
  const res = await post(`/v1/runs/${run}/batches/lease`, { lease_seconds: 60 });
  expect(res.status).toBe(200);
  return (await res.json()) as { step: number; batch_id: string };
}

// Time advanced by one test must not shift the next one's runs and leases.
afterEach(resetClock);
describe("per-step batch statistics", () => {
  it("are stored per env with the step and policy version of the batch", async () => {
    const run = uniqueRun("metrics-batch");
    const { base, envIds } = await setupRun(run, 8, [4, 4]);
    const [a, b] = envIds as [number, number];
    // env a: scores 1,0,1,0 (group helper); env b: all 0.5 except one 1.
    expect((await post(`${base}/scored_data`, group(1, 4, a, 6))).status).toBe(200);
    const other = { ...group(2, 4, b, 10), scores: [0.5, 0.5, 0.5, 1] };
    expect((await post(`${base}/scored_data`, other)).status).toBe(200);
    expect((await post(`/v1/runs/${run}/policy`, { version: 3 })).status).toBe(200);
    const batch = await lease(run);
    expect(batch.step).toBe(1);

    const { series } = await metrics(run, "?kind=train");
    const meanA = find(series, "train/score_mean", a);
    expect(meanA.steps).toEqual([1]);
    expect(meanA.values[0]).toBeCloseTo(0.5);
    expect(meanA.policy_versions).toEqual([3]);
    expect(find(series, "train/score_std", a).values[0]).toBeCloseTo(0.5);
    expect(find(series, "train/percent_correct", a).values[0]).toBeCloseTo(0.5);
    expect(find(series, "train/score_mean", b).values[0]).toBeCloseTo(0.625);
    expect(find(series, "train/score_max", b).values[0]).toBe(1);
    expect(find(series, "train/percent_correct", b).values[0]).toBe(1);
    // group(): 2 prompt tokens per sequence, the rest completion.
    expect(find(series, "train/completion_lengths", a).values[0]).toBe(4);
    expect(find(series, "train/completion_lengths", b).values[0]).toBe(8);
    expect(find(series, "train/sequences", a).values[0]).toBe(4);
    // Groups were produced at version 0 and trained at version 3.
    expect(find(series, "train/staleness_mean", a).values[0]).toBe(3);
  });

  it("add a step per batch and a run-wide throughput from the second batch on", async () => {
    const run = uniqueRun("metrics-steps");
    const { base, envIds } = await setupRun(run, 4, [4]);
    for (let i = 0; i < 3; i++) {
      expect((await post(`${base}/scored_data`, group(10 + i, 4, envIds[0]!))).status).toBe(200);
      await lease(run);
    }
    const { series } = await metrics(run, "?name=train/score_mean,train/sequences_per*");
    expect(series.map((s) => s.name).sort()).toEqual(["train/score_mean", "train/sequences_per_s"]);
    expect(find(series, "train/score_mean", envIds[0]!).steps).toEqual([1, 2, 3]);
    const throughput = find(series, "train/sequences_per_s", null);
    expect(throughput.steps).toEqual([2, 3]);
    expect(throughput.values.every((v) => v > 0)).toBe(true);

    const ranged = await metrics(run, `?name=train/score_mean&from_step=2&to_step=2`);
    expect(ranged.series[0]!.steps).toEqual([2]);
    const limited = await metrics(run, "?name=train/score_mean&limit=2");
    expect(limited.truncated).toBe(true);
    expect(limited.series[0]!.steps).toEqual([1, 2]);
  });

  it("are removed with a batch that is dissolved as too stale, which no trainer got", async () => {
    const run = uniqueRun("metrics-dissolve");
    const { base, envIds } = await setupRun(run, 4, [4]);
    expect((await post(`${base}/scored_data`, group(1, 4, envIds[0]!))).status).toBe(200);
    const first = await post(`/v1/runs/${run}/batches/lease`, { lease_seconds: 1 });
    expect(first.status).toBe(200);
    expect((await metrics(run, "?name=train/score_mean")).series[0]!.steps).toEqual([1]);
    advanceClock(1100); // the 1 s lease has expired
    expect((await post(`/v1/runs/${run}/policy`, { version: 2 })).status).toBe(200);
    expect(
      (await post(`${base}/scored_data`, { ...group(2, 4, envIds[0]!), policy_version: 2 })).status,
    ).toBe(200);
    const fresh = await post(`/v1/runs/${run}/batches/lease`, { max_staleness: 0 });
    expect(fresh.status).toBe(200);
    expect(((await fresh.json()) as { step: number }).step).toBe(2);
    expect((await metrics(run, "?name=train/score_mean")).series[0]!.steps).toEqual([2]);
  });
});

describe("env metrics and evaluations", () => {
  it("stores reported values, replaces a repeated report and filters by env and kind", async () => {
    const run = uniqueRun("metrics-env");
    const { envIds } = await setupRun(run, 8, [4, 4]);
    const [a, b] = envIds as [number, number];
    const report = (envId: number, body: unknown) =>
      post(`/v1/runs/${run}/envs/${envId}/metrics`, body);
    const first = await report(a, {
      step: 2,
      metrics: { "curriculum/level": 1, "drops/too long": 3 },
    });
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ status: "stored", step: 2, stored: 2 });
    expect((await report(a, { step: 2, metrics: { "curriculum/level": 2 } })).status).toBe(200);
    expect((await report(b, { step: 2, metrics: { "curriculum/level": 5 } })).status).toBe(200);
    expect(
      (await report(a, { step: 4, kind: "eval", policy_version: 7, metrics: { "eval/acc": 0.25 } }))
        .status,
    ).toBe(200);

    const onlyA = await metrics(run, `?name=curriculum/level&env=${a}`);
    expect(onlyA.series).toHaveLength(1);
    expect(onlyA.series[0]).toMatchObject({ kind: "env", steps: [2], values: [2] });
    const evals = await metrics(run, "?kind=eval");
    expect(evals.series).toEqual([
      {
        name: "eval/acc",
        env_id: a,
        kind: "eval",
        steps: [4],
        values: [0.25],
        policy_versions: [7],
      },
    ]);
    // The /evals route is a view of the same values.
    const view = await json<{ evals: { step: number; metrics: Record<string, number> }[] }>(
      call(`/v1/runs/${run}/envs/${a}/evals`),
    );
    expect(view.evals.map(({ step, metrics }) => ({ step, metrics }))).toEqual([
      { step: 4, metrics: { "eval/acc": 0.25 } },
    ]);
    expect(await evaluationMetricOverSteps(bindings.DB, run, "eval/acc")).toEqual([
      { step: 4, env_id: a, value: 0.25, policy_version: 7 },
    ]);
  });

  it("POST /evals lands in the store as kind eval", async () => {
    const run = uniqueRun("metrics-evals");
    const { envIds } = await setupRun(run, 8, [4]);
    const a = envIds[0]!;
    for (const [step, acc] of [
      [1, 0.2],
      [3, 0.6],
    ] as const) {
      const res = await post(`/v1/runs/${run}/envs/${a}/evals`, { step, metrics: { acc } });
      expect(res.status).toBe(200);
    }
    expect(await evaluationMetricOverSteps(bindings.DB, run, "acc", a)).toMatchObject([
      { step: 1, value: 0.2 },
      { step: 3, value: 0.6 },
    ]);
  });

  it("refuses bad reports with a 4xx and stores nothing", async () => {
    const run = uniqueRun("metrics-bad");
    const { envIds } = await setupRun(run, 8, [4]);
    const a = envIds[0]!;
    const bad = await post(`/v1/runs/${run}/envs/${a}/metrics`, { step: -1, metrics: { x: 1 } });
    expect(bad.status).toBe(422);
    const wrongType = await post(`/v1/runs/${run}/envs/${a}/metrics`, {
      step: 1,
      metrics: { x: "high" },
    });
    expect(wrongType.status).toBe(422);
    const unknownEnv = await post(`/v1/runs/${run}/envs/99/metrics`, {
      step: 1,
      metrics: { x: 1 },
    });
    expect(unknownEnv.status).toBe(404);
    expect((await unknownEnv.json()) as { error: { message: string } }).toMatchObject({
      error: { message: expect.stringContaining("not registered") },
    });
    expect((await call(`/v1/runs/${run}/metrics?kind=nope`)).status).toBe(400);
    expect((await metrics(run)).series).toEqual([]);
  });
});

interface Histogram {
  step: number | null;
  samples: number;
  bins: { lo: number; hi: number; count: number }[];
}

describe("views of the store", () => {
  it("/envs/{id}/scores is the histogram of the env's latest batch, from train/score_hist/*", async () => {
    const run = uniqueRun("metrics-hist");
    const { base, envIds } = await setupRun(run, 8, [4, 4, 4]);
    const [a, b, idle] = envIds as [number, number, number];
    const scores = (envId: number) => json<Histogram>(call(`/v1/runs/${run}/envs/${envId}/scores`));
    expect(await scores(a)).toEqual({ step: null, samples: 0, bins: [] });

    // env a: scores 1,0,1,0; env b: 0.5,0.5,0.5,1.
    expect((await post(`${base}/scored_data`, group(1, 4, a))).status).toBe(200);
    const other = { ...group(2, 4, b), scores: [0.5, 0.5, 0.5, 1] };
    expect((await post(`${base}/scored_data`, other)).status).toBe(200);
    expect((await lease(run)).step).toBe(1);

    const first = await scores(a);
    expect(first.step).toBe(1);
    expect(first.samples).toBe(4);
    expect(first.bins).toHaveLength(20);
    expect(first.bins[0]).toEqual({ lo: 0, hi: 0.05, count: 2 });
    expect(first.bins[19]).toMatchObject({ hi: 1, count: 2 });
    expect(first.bins.slice(1, 19).every((bin) => bin.count === 0)).toBe(true);
    const second = await scores(b);
    expect(second.bins[0]).toMatchObject({ lo: 0.5, count: 3 });
    expect(second.bins[19]).toMatchObject({ hi: 1, count: 1 });
    // The stored buckets behind the view: only non-empty ones.
    const stored = await metrics(run, `?name=train/score_hist/*&env=${a}`);
    expect(stored.series.map((s) => [s.name, s.steps, s.values])).toEqual([
      ["train/score_hist/00", [1], [2]],
      ["train/score_hist/19", [1], [2]],
    ]);

    // Next batch: env a's scores all equal make one bucket; an env with no batch has none.
    const same = { ...group(3, 4, a), scores: [1, 1, 1, 1] };
    expect((await post(`${base}/scored_data`, same)).status).toBe(200);
    expect((await post(`${base}/scored_data`, group(4, 4, b))).status).toBe(200);
    expect((await lease(run)).step).toBe(2);
    expect(await scores(a)).toEqual({ step: 2, samples: 4, bins: [{ lo: 1, hi: 1, count: 4 }] });
    expect(await scores(idle)).toEqual({ step: null, samples: 0, bins: [] });
  });

  it("/timeseries buckets each batch's statistics by when the batch was formed", async () => {
    const run = uniqueRun("metrics-time");
    const { base, envIds } = await setupRun(run, 8, [4, 4]);
    const [a, b] = envIds as [number, number];
    type Series = { bucket_s: number; points: Record<string, number | null>[] };
    const timeline = () => json<Series>(call(`/v1/runs/${run}/timeseries?minutes=5&bucket_s=3600`));
    expect((await timeline()).points).toEqual([]);

    expect((await post(`${base}/scored_data`, group(1, 4, a))).status).toBe(200);
    const other = { ...group(2, 4, b), scores: [0.5, 0.5, 0.5, 1] };
    expect((await post(`${base}/scored_data`, other)).status).toBe(200);
    await lease(run);
    await new Promise((r) => setTimeout(r, 5));
    // Ingested after the first batch: counted with the second.
    expect((await post(`${base}/scored_data`, group(3, 4, a))).status).toBe(200);
    expect((await post(`${base}/scored_data`, group(4, 4, b))).status).toBe(200);
    expect((await post(`${base}/scored_data`, group(5, 4, b))).status).toBe(200);
    await lease(run);

    const ingest = await metrics(run, "?name=train/ingest_*&env=-1");
    expect(find(ingest.series, "train/ingest_groups", null)).toMatchObject({
      steps: [1, 2],
      values: [2, 3],
    });
    expect(find(ingest.series, "train/ingest_sequences", null).values).toEqual([8, 12]);

    const { bucket_s, points } = await timeline();
    expect(bucket_s).toBe(3600);
    const sum = (key: string) => points.reduce((n, p) => n + Number(p[key]), 0);
    expect(sum("delivered_batches")).toBe(2);
    expect(sum("delivered_sequences")).toBe(16);
    expect(sum("ingest_groups")).toBe(5);
    expect(sum("ingest_sequences")).toBe(20);
    expect(points.every((p) => typeof p.mean_score === "number")).toBe(true);
  });
});

describe("batch statistics stored before migration 0020", () => {
  it("move into batch_statistics and read back the same; a trainer's own train values stay", async () => {
    const run = uniqueRun("metrics-moved");
    const rows: [string, number, number, number][] = [
      ["train/score_mean", 0, 1, 0.25],
      ["train/sequences", 0, 1, 4],
      ["train/score_hist/00", 0, 1, 3],
      // Every bit of a real survives the move (SQLite's own JSON would keep 15 digits).
      ["train/score_mean", 0, 2, 1 / 3],
      ["train/sequences_per_s", -1, 2, 12.5],
      // Reported by a trainer: not batch statistics (the histogram's `_` is no wildcard).
      ["train/loss", -1, 2, 0.75],
      ["train/score_histX00", 0, 2, 1],
    ];
    await bindings.DB.batch(
      rows.map(([name, envId, step, value]) =>
        bindings.DB.prepare(
          "INSERT INTO metrics (run, name, env_id, step, policy_version, value, kind, created_at) VALUES (?1, ?2, ?3, ?4, 0, ?5, 'train', ?6)",
        ).bind(run, name, envId, step, value, 1_000 + step),
      ),
    );
    const migration = env.TEST_MIGRATIONS.find((m) => m.name.startsWith("0020_"));
    const moves = migration!.queries.filter((q) =>
      /^\s*(INSERT|DELETE)/m.test(q.replace(/--.*$/gm, "")),
    );
    expect(moves).toHaveLength(2);
    for (const query of moves) await bindings.DB.prepare(query).run();

    const stored = await bindings.DB.prepare(
      "SELECT step, env_id, statistics FROM batch_statistics WHERE run = ?1 ORDER BY step, env_id",
    )
      .bind(run)
      .all<{ step: number; env_id: number; statistics: string }>();
    expect(stored.results.map((r) => [r.step, r.env_id, JSON.parse(r.statistics)])).toEqual([
      [1, 0, { "train/score_mean": 0.25, "train/sequences": 4, "train/score_hist/00": 3 }],
      [2, -1, { "train/sequences_per_s": 12.5 }],
      [2, 0, { "train/score_mean": 1 / 3 }],
    ]);
    const left = await bindings.DB.prepare("SELECT name FROM metrics WHERE run = ?1 ORDER BY name")
      .bind(run)
      .all<{ name: string }>();
    expect(left.results.map((r) => r.name)).toEqual(["train/loss", "train/score_histX00"]);

    const { series } = await metrics(run, "?kind=train");
    expect(find(series, "train/score_mean", 0).steps).toEqual([1, 2]);
    expect(find(series, "train/score_mean", 0).values).toEqual([0.25, 1 / 3]);
    expect(find(series, "train/sequences_per_s", null).values).toEqual([12.5]);
    expect(find(series, "train/loss", null).values).toEqual([0.75]);
    expect(series).toHaveLength(6);
  });
});
