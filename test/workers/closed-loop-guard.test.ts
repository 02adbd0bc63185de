import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { call, callWith, group, json, post, setupRun, uniqueRun } from "./helpers";

function put(path: string, body: unknown) {
  return call(path, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

const evaluate = (run: string, envId: number, step: number, metrics: Record<string, number>) =>
  json<{ regression: boolean }>(post(`/v1/runs/${run}/envs/${envId}/evals`, { step, metrics }));

interface Events {
  events: { kind: string; message: string; data: Record<string, unknown> }[];
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("regression guard", () => {
  it("takes the first evaluation as baseline and alerts on a drop below 0.95 × baseline", async () => {
    const run = uniqueRun("guard-alert");
    const { envIds } = await setupRun(run, 4, [2]);
    const envId = envIds[0]!;
    expect(await json(call(`/v1/runs/${run}/guard`))).toEqual({
      enabled: true,
      factor: 0.95,
      lower_is_better: [],
      action: { type: "alert" },
      webhook_url: null,
      baselines: [],
    });
    expect((await evaluate(run, envId, 10, { accuracy: 0.8 })).regression).toBe(false);
    expect((await evaluate(run, envId, 20, { accuracy: 0.77 })).regression).toBe(false);
    expect((await evaluate(run, envId, 30, { accuracy: 0.7 })).regression).toBe(true);
    const { events } = await json<Events>(call(`/v1/runs/${run}/events`));
    expect(events).toHaveLength(1);
    expect(events[0]!.kind).toBe("regression");
    expect(events[0]!.message).toContain("accuracy = 0.7 at step 30 fell below");
    expect(events[0]!.message).toContain("alert only");
    const guard = await json<{ baselines: unknown[] }>(call(`/v1/runs/${run}/guard`));
    expect(guard.baselines).toEqual([
      {
        env_id: envId,
        metric: "accuracy",
        value: 0.8,
        source: "first",
        set_at: expect.any(Number),
      },
    ]);
  });

  it("checks evaluations reported through the metrics route (kind eval) as well", async () => {
    const run = uniqueRun("guard-metrics-route");
    const { envIds } = await setupRun(run, 4, [2]);
    const envId = envIds[0]!;
    const report = (step: number, value: number) =>
      post(`/v1/runs/${run}/envs/${envId}/metrics`, {
        step,
        kind: "eval",
        metrics: { "eval/pass@1": value },
      });
    expect((await report(5, 0.6)).status).toBe(200);
    expect((await report(6, 0.3)).status).toBe(200);
    // Env metrics are not evaluations: they never set baselines or raise events.
    const envMetric = await post(`/v1/runs/${run}/envs/${envId}/metrics`, {
      step: 7,
      metrics: { "eval/pass@1": 0 },
    });
    expect(envMetric.status).toBe(200);
    const { events } = await json<Events>(call(`/v1/runs/${run}/events`));
    expect(events).toHaveLength(1);
    expect(events[0]!.message).toContain("eval/pass@1 = 0.3 at step 6 fell below");
  });

  it("reads metrics named lower-is-better the other way round", async () => {
    const run = uniqueRun("guard-loss");
    const { envIds } = await setupRun(run, 4, [2]);
    const envId = envIds[0]!;
    const set = await put(`/v1/runs/${run}/guard`, { lower_is_better: ["eval/loss"] });
    expect(await json(set)).toMatchObject({ lower_is_better: ["eval/loss"] });
    expect((await evaluate(run, envId, 1, { "eval/loss": 2 })).regression).toBe(false);
    // A falling loss is progress, not a regression.
    expect((await evaluate(run, envId, 2, { "eval/loss": 1 })).regression).toBe(false);
    expect((await evaluate(run, envId, 3, { "eval/loss": 2.5 })).regression).toBe(true);
    const { events } = await json<Events>(call(`/v1/runs/${run}/events`));
    expect(events).toHaveLength(1);
    expect(events[0]!.message).toContain("eval/loss = 2.5 at step 3 rose above");
  });

  it("uses baselines set through the API, and can pause an env or change weights", async () => {
    const run = uniqueRun("guard-act");
    const { base, envIds } = await setupRun(run, 4, [2, 2]);
    const [a, b] = [envIds[0]!, envIds[1]!];
    const set = await put(`/v1/runs/${run}/guard/baselines`, {
      baselines: [{ env_id: a, metric: "reward", value: 2 }],
    });
    expect(set.status).toBe(200);
    expect(
      (await put(`/v1/runs/${run}/guard`, { action: { type: "pause_env", env_id: b } })).status,
    ).toBe(200);
    // 1.95 ≥ 0.95 × 2 = 1.9: fine; 1.8 is not.
    expect((await evaluate(run, a, 1, { reward: 1.95 })).regression).toBe(false);
    expect((await evaluate(run, a, 2, { reward: 1.8 })).regression).toBe(true);
    const status = await json<{ env_weight: number }>(call(`${base}/status-env?env_id=${b}`));
    expect(status.env_weight).toBe(0);

    await put(`/v1/runs/${run}/guard`, { action: { type: "set_weights", weights: { [a]: 5 } } });
    expect((await evaluate(run, a, 3, { reward: 1 })).regression).toBe(true);
    const stats = await json<{ envs: { env_id: number; weight: number }[] }>(
      call(`/v1/runs/${run}/stats`),
    );
    expect(stats.envs.find((e) => e.env_id === a)!.weight).toBe(5);
    const { events } = await json<Events>(call(`/v1/runs/${run}/events`));
    expect(events.map((e) => e.data.action)).toEqual([
      { type: "set_weights", weights: { [a]: 5 } },
      { type: "pause_env", env_id: b },
    ]);
  });

  it("POSTs the event to the webhook", async () => {
    const run = uniqueRun("guard-hook");
    const { envIds } = await setupRun(run, 4, [2]);
    const envId = envIds[0]!;
    await put(`/v1/runs/${run}/guard`, { webhook_url: "https://hooks.example/guard" });
    await evaluate(run, envId, 1, { accuracy: 0.9 });
    // The app called in this isolate (not through the Worker entry), so its fetch can be watched.
    const sent: { url: string; body: unknown }[] = [];
    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      if (!url.startsWith("https://hooks.example/")) return realFetch(input, init);
      sent.push({ url, body: JSON.parse(String(init?.body)) });
      return new Response("ok");
    });
    const res = await callWith({}, `/v1/runs/${run}/envs/${envId}/evals`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ step: 2, metrics: { accuracy: 0.5 } }),
    });
    expect(await res.json()).toMatchObject({ regression: true });
    for (let i = 0; sent.length === 0 && i < 100; i++) await new Promise((r) => setTimeout(r, 5));
    expect(sent).toEqual([
      {
        url: "https://hooks.example/guard",
        body: {
          run,
          event: expect.objectContaining({
            kind: "regression",
            message: expect.stringContaining("accuracy = 0.5 at step 2"),
          }),
        },
      },
    ]);
  });

  it("refuses a webhook into a private network unless the operator allows it", async () => {
    const run = uniqueRun("guard-ssrf");
    for (const url of ["http://127.0.0.1:9/hook", "http://[::1]/x", "http://169.254.169.254/"]) {
      const res = await put(`/v1/runs/${run}/guard`, { webhook_url: url, factor: 0.5 });
      expect(res.status).toBe(422);
      const text = await res.text();
      expect(text).toContain("webhook_url must be a public address");
      expect(text).toContain("setting GUARD_WEBHOOK_ALLOW_PRIVATE to true");
    }
    expect(await json(call(`/v1/runs/${run}/guard`))).toMatchObject({
      webhook_url: null,
      factor: 0.95,
    });
    const allowed = await callWith(
      { GUARD_WEBHOOK_ALLOW_PRIVATE: "true" },
      `/v1/runs/${run}/guard`,
      {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ webhook_url: "http://127.0.0.1:9/hook" }),
      },
    );
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toMatchObject({ webhook_url: "http://127.0.0.1:9/hook" });
  });

  it("does not POST to a private webhook stored before the check (it logs the refusal)", async () => {
    const run = uniqueRun("guard-ssrf-stored");
    const { envIds } = await setupRun(run, 4, [2]);
    const envId = envIds[0]!;
    await put(`/v1/runs/${run}/guard`, { factor: 0.95 });
    await env.DB.prepare("UPDATE regression_guards SET webhook_url = ?1 WHERE run = ?2")
      .bind("http://10.0.0.7/hook", run)
      .run();
    await evaluate(run, envId, 1, { accuracy: 0.9 });
    const fetched: string[] = [];
    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      if (url.startsWith("http://10.0.0.7/")) fetched.push(url);
      return url.startsWith("http://10.") ? new Response("ok") : realFetch(input, init);
    });
    const logged: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => {
      logged.push(String(line));
    });
    const pending: Promise<unknown>[] = [];
    const res = await callWith(
      {},
      `/v1/runs/${run}/envs/${envId}/evals`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ step: 2, metrics: { accuracy: 0.5 } }),
      },
      (work) => pending.push(work),
    );
    expect(await res.json()).toMatchObject({ regression: true });
    await Promise.all(pending);
    expect(fetched).toEqual([]);
    expect(logged.some((l) => l.includes("guard webhook failed") && l.includes("refused"))).toBe(
      true,
    );
  });

  it("refuses bad settings with a message, changing nothing", async () => {
    const run = uniqueRun("guard-bad");
    await setupRun(run, 4, [2]);
    const res = await put(`/v1/runs/${run}/guard`, { factor: 1.5 });
    expect(res.status).toBe(422);
    expect(await res.text()).toContain("factor must be at most 1");
    expect((await put(`/v1/runs/${run}/guard`, { action: { type: "reboot" } })).status).toBe(422);
    expect((await put(`/v1/runs/${run}/guard`, { webhook_url: "ftp://x" })).status).toBe(422);
    expect(await json(call(`/v1/runs/${run}/guard`))).toMatchObject({ factor: 0.95 });
  });
});

/** One scored group of `size` sequences whose every score is `score`. */
function scored(seed: number, size: number, envId: number, score: number) {
  return { ...group(seed, size, envId), scores: Array.from({ length: size }, () => score) };
}

describe("closed loop", () => {
  it("replays at the configured fraction, and a drop in evaluation raises that fraction", async () => {
    const run = uniqueRun("closed-loop");
    const { base, envIds } = await setupRun(run, 10, [1]);
    const envId = envIds[0]!;
    await put(`/v1/runs/${run}/replay`, { enabled: true, fraction: 0.3, max_replays: 3 });
    await put(`/v1/runs/${run}/guard`, { action: { type: "raise_replay", fraction: 0.6 } });

    let seed = 0;
    /** Submits a batch's worth of online data, leases, acks; returns the replayed share. */
    const step = async (): Promise<number> => {
      for (let i = 0; i < 10; i++) {
        await post(`${base}/scored_data`, scored(seed++, 1, envId, i % 3 === 0 ? 1 : 0.2));
      }
      const res = await post(`/v1/runs/${run}/batches/lease`, {});
      expect(res.status).toBe(200);
      const leased = await res.json<{
        batch_id: string;
        groups: { num_seqs: number; replayed: boolean }[];
      }>();
      expect(leased.groups.reduce((s, g) => s + g.num_seqs, 0)).toBe(10);
      await post(`/v1/runs/${run}/batches/${leased.batch_id}/ack`, {});
      return leased.groups.filter((g) => g.replayed).length / 10;
    };

    expect(await step()).toBe(0); // nothing buffered yet
    const before = [await step(), await step(), await step()];
    expect(before).toEqual([0.3, 0.3, 0.3]);
    expect((await evaluate(run, envId, 4, { accuracy: 0.9 })).regression).toBe(false);

    // Injected drop: the guard raises the replay fraction, and the next batches follow it.
    expect((await evaluate(run, envId, 5, { accuracy: 0.5 })).regression).toBe(true);
    expect(await json(call(`/v1/runs/${run}/replay`))).toMatchObject({ fraction: 0.6 });
    const after = [await step(), await step()];
    expect(after).toEqual([0.6, 0.6]);
    const { events } = await json<Events>(call(`/v1/runs/${run}/events`));
    expect(events[0]!.data.applied).toEqual({ replay_fraction: 0.6, previous: 0.3 });
  });
});
