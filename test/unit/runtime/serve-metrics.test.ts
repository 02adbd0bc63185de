/**
 * serveEnv reports what an env records: at each step change the step's metrics() (observe())
 * and drops by reason, and each evaluation's results, to POST /v1/runs/{run}/envs/{id}/metrics;
 * against a server without that route it stops trying after the first 404.
 */
import { afterEach, describe, expect, it } from "vitest";
import { BaseEnv, type TrajectoryResult } from "../../../src/env-sdk/base-env";
import { type BaseEnvConfig, BaseEnvConfigSchema } from "../../../src/env-sdk/config";
import { RolloutApiClient } from "../../../src/env-sdk/runtime/api-client";
import { nodeGetWithBody } from "../../../src/env-sdk/runtime/node-get-with-body";
import { type ServeEvent, serveEnv } from "../../../src/env-sdk/runtime/serve";
import { CharTokenizer, FakeInference } from "../envs/fakes";
import { type RecordedRequest, startFakeAtropos } from "./fake-atropos";

/** Every third item is dropped; the others score their item's parity; evaluate() says 0.5. */
class ObservingEnv extends BaseEnv<number, BaseEnvConfig> {
  static override envName = "observing";
  private next = 0;

  async getNextItem(): Promise<number> {
    return this.next++;
  }

  override async collectTrajectory(item: number): Promise<TrajectoryResult<number>> {
    this.observe("item_size", item % 4);
    const tokens = this.tokenizer.encode(`item ${item} answer ${Math.random()}`);
    return [
      {
        tokens,
        masks: tokens.map((t, i) => (i < 3 ? -100 : t)),
        scores: item % 3 === 0 ? 0 : Math.random(),
      },
      [],
    ];
  }

  override async evaluate(): Promise<Record<string, number>> {
    return { "eval/accuracy": 0.5 };
  }
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function metricReports(requests: RecordedRequest[]) {
  return requests
    .filter((r) => r.path.endsWith("/metrics"))
    .map((r) => ({
      path: r.path,
      ...(r.json as { step: number; kind: string; metrics: Record<string, number> }),
    }));
}

function serve(url: string, events: ServeEvent[]) {
  const tokenizer = new CharTokenizer();
  const env = new ObservingEnv(
    BaseEnvConfigSchema.parse({
      group_size: 2,
      max_num_workers: 2,
      total_steps: 4,
      steps_per_eval: 2,
    }),
    new FakeInference(tokenizer),
    tokenizer,
  );
  return serveEnv(env, new RolloutApiClient({ url, getWithBody: nodeGetWithBody }), {
    pollIntervalMs: 1,
    onEvent: (e) => events.push(e),
  });
}

describe("serveEnv metrics", () => {
  it("reports each finished step's env metrics and each evaluation", async () => {
    const api = await startFakeAtropos({ batchSize: 8, acceptMetrics: true });
    closers.push(api.close);
    const events: ServeEvent[] = [];
    const summary = await serve(api.url, events);
    expect(summary.exitReason).toBe("terminated");
    const reports = metricReports(api.state.requests);
    expect(reports.every((r) => r.path === `/v1/runs/default/envs/0/metrics`)).toBe(true);
    const env = reports.filter((r) => r.kind === "env");
    // One report per finished step (steps never repeat), each with the observed summary.
    const steps = env.map((r) => r.step);
    expect(new Set(steps).size).toBe(steps.length);
    expect(steps[0]).toBe(0);
    const first = env[0]!.metrics;
    expect(first.item_size_count).toBeGreaterThan(0);
    expect(first.item_size_max).toBeLessThanOrEqual(3);
    // Items 0, 3, 6… score 0 in every rollout: dropped as identical scores, counted per step.
    const dropKey = "drops/all scores identical (N)";
    const reported = env.reduce((sum, r) => sum + (r.metrics[dropKey] ?? 0), 0);
    expect(reported).toBeGreaterThan(0);
    expect(reported).toBe(summary.groupsDropped);
    const evals = reports.filter((r) => r.kind === "eval");
    expect(evals.length).toBeGreaterThan(0);
    expect(evals[0]).toMatchObject({ step: 2, metrics: { "eval/accuracy": 0.5 } });
    expect(events.some((e) => e.type === "metrics_error")).toBe(false);
    expect(events.filter((e) => e.type === "metrics").length).toBe(reports.length);
  }, 30_000);

  it("stops reporting after a 404 from a server without the metrics route", async () => {
    const api = await startFakeAtropos({ batchSize: 8 });
    closers.push(api.close);
    const events: ServeEvent[] = [];
    await serve(api.url, events);
    expect(metricReports(api.state.requests)).toHaveLength(1);
    expect(events.filter((e) => e.type === "metrics_error")).toHaveLength(1);
    // The values still reach the CLI's listeners (W&B, JSONL).
    expect(events.filter((e) => e.type === "metrics").length).toBeGreaterThan(1);
  }, 30_000);
});
