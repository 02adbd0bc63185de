/**
 * EnvFeeder Durable Object ticks (driven with runDurableObjectAlarm): registration with the run,
 * feeding items to the queue, and evaluation when the run's step crosses steps_per_eval — with
 * STOP_TRAIN holding back new training items while it runs.
 */
import {
  createExecutionContext,
  createMessageBatch,
  getQueueResult,
  runDurableObjectAlarm,
  runInDurableObject,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import type { MetricsResponse } from "../../src/core/wire/api-schemas";
import type { RolloutItemMessage } from "../../src/core/wire/queue-messages";
import { parseServerConfig } from "../../src/core/wire/server-config";
import { setSandboxProvider } from "../../src/sandbox/registry";
import { handleSandboxRequest } from "../../src/sandbox/service";
import type { EnvFeeder, FeederState, FeederSummary } from "../../src/worker/env-feeder";
import { handleQueueBatch, ROLLOUT_QUEUE } from "../../src/worker/queue-handler";
import { WorkerLoaderSandbox } from "../../src/worker/sandbox/worker-loader";
import { call, json, post, REGISTRATION, uniqueRun } from "./helpers";
import {
  BigItemTestEnv,
  ConstantRewardTestEnv,
  EvalTestEnv,
  evaluationControl,
  GROUP_SIZE,
  GROUPS_PER_CONSTANT_ITEM,
  SandboxEvalTestEnv,
} from "./test-envs";
import { testEnvCatalog } from "./test-worker";

const bindings = env as unknown as Bindings;

const INFERENCE = [
  parseServerConfig({ base_url: "http://127.0.0.1:9", server_type: "vllm", model_name: "unused" }),
];

describe("EnvFeeder", () => {
  it("refuses items too large for a queue message, with a message that says what to change", async () => {
    const run = uniqueRun("bigitem");
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 8 });
    const name = `${run}/feeder_big_item_test/0`;
    const stub = bindings.ENV_FEEDER.get(bindings.ENV_FEEDER.idFromName(name));
    await stub.start(run, name, {
      envName: BigItemTestEnv.envName,
      config: { group_size: 4, max_num_workers: 2 },
      inference: INFERENCE,
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const summary = await stub.describe();
    expect(summary).toMatchObject({ in_flight: 0, issued: 0 });
    expect(summary!.dropped).toBeGreaterThan(0);
    expect(summary!.last_error).toContain("make getNextItem() return ids or seeds");
    await stub.stop();
  });

  it("registers, feeds, and evaluates on crossing steps_per_eval while holding training back", async () => {
    const run = uniqueRun("feeder");
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 8 });
    const name = `${run}/feeder_eval_test/0`;
    const stub = bindings.ENV_FEEDER.get(bindings.ENV_FEEDER.idFromName(name));
    await stub.start(run, name, {
      envName: EvalTestEnv.envName,
      config: { group_size: 4, max_num_workers: 3, steps_per_eval: 2, tokenizer_name: "qwen3" },
      inference: INFERENCE,
    });

    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const fed = await stub.describe();
    expect(fed).toMatchObject({ env_id: 0, status: "running", in_flight: 3, issued: 3 });
    expect(fed!.eval_running).toBe(false);
    // The run's stats (what the dashboard shows) carry the feeder's own state.
    const workerStatus = async () =>
      (
        await json<{ envs: { worker_status: string | null; items_in_flight: number | null }[] }>(
          call(`/v1/runs/${run}/stats`),
        )
      ).envs[0]!;
    expect(await workerStatus()).toMatchObject({ worker_status: "running", items_in_flight: 3 });

    // The trainer moves the run to step 2: the feeder starts an evaluation and stops feeding.
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 8, starting_step: 2 });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const evaluating = await stub.describe();
    expect(evaluating!.eval_running).toBe(true);
    expect((await workerStatus()).worker_status).toBe("evaluating");
    expect(evaluating!.issued).toBe(3);

    // Let evaluate() finish, and wait for the evaluation itself (its metrics stored).
    evaluationControl.released = true;
    await runInDurableObject(stub, async (instance: EnvFeeder) => {
      await (instance as unknown as { evaluation: Promise<void> | null }).evaluation;
    });
    const { evals } = await json<{ evals: { step: number; metrics: Record<string, number> }[] }>(
      call(`/v1/runs/${run}/envs/0/evals`),
    );
    expect(evals).toEqual([expect.objectContaining({ step: 2, metrics: { accuracy: 0.75 } })]);
    const after = await stub.describe();
    expect(after).toMatchObject({ eval_running: false, evaluations: 1 });
    await stub.stop();
    expect((await workerStatus()).worker_status).toBe("stopped");
  });

  it("a PATCH pausing its env holds the feeder at its next tick; resuming lets it feed again", async () => {
    const run = uniqueRun("feeder-pause");
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 8 });
    const name = `${run}/feeder_eval_test/pause`;
    const stub = bindings.ENV_FEEDER.get(bindings.ENV_FEEDER.idFromName(name));
    await stub.start(run, name, {
      envName: EvalTestEnv.envName,
      config: { group_size: 4, max_num_workers: 2, tokenizer_name: "qwen3" },
      inference: INFERENCE,
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.describe()).toMatchObject({ env_id: 0, status: "running", issued: 2 });
    const setPaused = (paused: boolean) =>
      call(`/v1/runs/${run}/envs/0`, {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ paused }),
      });
    expect((await setPaused(true)).status).toBe(200);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.describe()).toMatchObject({ status: "paused", issued: 2 });
    const stats = await json<{ envs: { worker_status: string | null }[] }>(
      call(`/v1/runs/${run}/stats`),
    );
    expect(stats.envs[0]!.worker_status).toBe("paused");
    expect((await setPaused(false)).status).toBe(200);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.describe()).toMatchObject({ status: "running" });
    await stub.stop();
  });

  it("frees the slots of a failed queue send at once and sends the same items on a later tick", async () => {
    const run = uniqueRun("feeder-sendfail");
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 8 });
    const name = `${run}/feeder_eval_test/sendfail`;
    const stub = bindings.ENV_FEEDER.get(bindings.ENV_FEEDER.idFromName(name));
    // worker_timeout 0: before, the failed items held their slots forever.
    await stub.start(run, name, {
      envName: EvalTestEnv.envName,
      config: { group_size: 4, max_num_workers: 2, worker_timeout: 0, tokenizer_name: "qwen3" },
      inference: INFERENCE,
    });
    const sends: string[][] = [];
    const queue = (fail: boolean) =>
      runInDurableObject(stub, (instance: EnvFeeder) => {
        // why: the object's bindings are protected; the test swaps the queue for one it controls.
        const target = instance as unknown as { env: Bindings };
        target.env = {
          ...bindings,
          ROLLOUT_ITEMS: {
            sendBatch: async (batch: { body: RolloutItemMessage }[]) => {
              sends.push(batch.map((m) => m.body.itemId));
              if (fail) throw new Error("queue unavailable");
            },
          } as unknown as Bindings["ROLLOUT_ITEMS"],
        };
      });
    await queue(true);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.describe()).toMatchObject({ in_flight: 0, issued: 0 });
    expect((await stub.describe())!.last_error).toContain("queue unavailable");
    await queue(false);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.describe()).toMatchObject({ in_flight: 2, issued: 2, last_error: null });
    expect(sends).toHaveLength(2);
    expect(sends[1]).toEqual(sends[0]);
    await stub.stop();
  });

  it("evaluates with code run in the SANDBOX binding, in an isolate that never handled a queue batch", async () => {
    // A fresh isolate: no queue batch set a process-wide sandbox provider.
    setSandboxProvider(null);
    const run = uniqueRun("feeder-sandbox-eval");
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 8 });
    const name = `${run}/feeder_sandbox_eval_test/0`;
    const stub = bindings.ENV_FEEDER.get(bindings.ENV_FEEDER.idFromName(name));
    await stub.start(run, name, {
      envName: SandboxEvalTestEnv.envName,
      config: { group_size: 4, max_num_workers: 1, steps_per_eval: 2 },
      inference: INFERENCE,
    });
    const sandbox = new WorkerLoaderSandbox(bindings.TEST_LOADER);
    const ran: string[] = [];
    await runInDurableObject(stub, (instance: EnvFeeder) => {
      // why: the object's bindings are protected; the test binds a sandbox service it observes.
      const target = instance as unknown as { env: Bindings };
      target.env = {
        ...bindings,
        SANDBOX: {
          fetch: (input: RequestInfo | URL, init?: RequestInit) => {
            const request = new Request(input, init);
            ran.push(new URL(request.url).pathname);
            return handleSandboxRequest(sandbox, request);
          },
        } as unknown as Bindings["SANDBOX"],
      };
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 8, starting_step: 2 });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    // The evaluation's own promise: settled when its metrics are stored.
    await runInDurableObject(stub, async (instance: EnvFeeder) => {
      await (instance as unknown as { evaluation: Promise<void> | null }).evaluation;
    });
    expect(await stub.describe()).toMatchObject({ evaluations: 1, last_error: null });
    const { evals } = await json<{ evals: { step: number; metrics: Record<string, number> }[] }>(
      call(`/v1/runs/${run}/envs/0/evals`),
    );
    expect(evals).toEqual([expect.objectContaining({ step: 2, metrics: { answer: 42 } })]);
    expect(ran).toEqual(["/run"]);
    await stub.stop();
  });

  it("keeps a stop that arrives while a tick is running, instead of the tick's status", async () => {
    const run = uniqueRun("feeder-stop");
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 8 });
    const name = `${run}/feeder_eval_test/stop`;
    const stub = bindings.ENV_FEEDER.get(bindings.ENV_FEEDER.idFromName(name));
    await stub.start(run, name, {
      envName: EvalTestEnv.envName,
      config: { group_size: 4, max_num_workers: 1, tokenizer_name: "qwen3" },
      inference: INFERENCE,
    });
    await runInDurableObject(stub, async (instance, state) => {
      const feeder = instance as unknown as EnvFeeder;
      // The tick's first await is the env's registration with the run (a call to another
      // object); stop() runs meanwhile, before the tick sets the status it computed.
      const tick = feeder.alarm();
      const stopped = await feeder.stop();
      expect(stopped!.status).toBe("stopped");
      await tick;
      expect((await feeder.describe())!.status).toBe("stopped");
      // Not re-armed: a stopped feeder ticks no more.
      expect(await state.storage.getAlarm()).toBeNull();
    });
  });

  describe("drop back-off", () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    /** The feeder's in-flight items as the queue messages its tick sent (same ids and items). */
    async function inFlightMessages(
      stub: DurableObjectStub<EnvFeeder>,
    ): Promise<RolloutItemMessage[]> {
      return runInDurableObject(stub, async (_instance, ctx) => {
        const state = (await ctx.storage.get<FeederState>("state"))!;
        return Object.entries(state.inFlight).map(([itemId, f]) => ({
          itemId,
          run: state.run,
          feeder: state.name,
          envId: state.envId!,
          spec: state.spec,
          item: f.item,
          policyVersion: 0,
          issuedAt: f.issuedAt,
        }));
      });
    }

    /** Runs the items through the queue consumer (rollout, validation, report to the feeder). */
    async function consume(bodies: RolloutItemMessage[]): Promise<void> {
      const batch = createMessageBatch<RolloutItemMessage>(
        ROLLOUT_QUEUE,
        bodies.map((body, i) => ({
          id: `${body.itemId}-${i}`,
          timestamp: new Date(),
          attempts: 1,
          body,
        })),
      );
      const ctx = createExecutionContext();
      await handleQueueBatch(batch, bindings, ctx, testEnvCatalog);
      await getQueueResult(batch, ctx);
    }

    it("after 200 identical-score groups: at most 1 item/s, the reason in its status every 10 s", async () => {
      // Date is faked (timers are not): the feeder's clock moves only when the test moves it. A
      // year ahead, so that the alarms it sets lie in the real future and never fire on their own.
      const start = Date.now() + 365 * 24 * 3600 * 1000;
      let clock = start;
      vi.useFakeTimers({ toFake: ["Date"] });
      vi.setSystemTime(clock);
      const run = uniqueRun("backoff");
      await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 1024 });
      const name = `${run}/${ConstantRewardTestEnv.envName}/0`;
      const stub = bindings.ENV_FEEDER.get(bindings.ENV_FEEDER.idFromName(name));
      await stub.start(run, name, {
        envName: ConstantRewardTestEnv.envName,
        config: { group_size: GROUP_SIZE, max_num_workers: 20, worker_timeout: -1 },
        inference: INFERENCE,
      });
      const envWorker = async () =>
        json<FeederSummary>(call(`/v1/runs/${run}/env-workers/${ConstantRewardTestEnv.envName}/0`));

      // Full speed: one tick issues 20 items, whose 200 groups are all rejected. (The pool's own
      // queue consumer may run some of them too; the feeder counts each item once.)
      expect(GROUPS_PER_CONSTANT_ITEM).toBe(10);
      expect(await runDurableObjectAlarm(stub)).toBe(true);
      const first = await inFlightMessages(stub);
      expect(first.length).toBeLessThanOrEqual(20);
      await consume(first);
      const reason =
        "all scores identical (0) in the last 200 groups: your reward gives every answer the same score; backing off to 1 item/s until a group is kept";
      expect(await envWorker()).toMatchObject({
        issued: 20,
        in_flight: 0,
        rejected: 200,
        backing_off: { message: reason, reported_at: clock },
      });

      // Backing off: however often it ticks within a second, one item.
      for (let tick = 0; tick < 5; tick++) {
        expect(await runDurableObjectAlarm(stub)).toBe(true);
        clock += 100;
        vi.setSystemTime(clock);
      }
      expect((await stub.describe())!.issued).toBe(21);

      // One item per second of the clock; the reason is reported again after 10 s.
      for (let second = 1; second <= 10; second++) {
        await consume(await inFlightMessages(stub));
        clock += 1000;
        vi.setSystemTime(clock);
        expect(await runDurableObjectAlarm(stub)).toBe(true);
        expect(await runDurableObjectAlarm(stub)).toBe(true);
        expect((await stub.describe())!.issued).toBe(21 + second);
      }
      await consume(await inFlightMessages(stub));
      const later = await envWorker();
      expect(later.rejected).toBe(200 + 11 * GROUPS_PER_CONSTANT_ITEM);
      expect(later.backing_off).toEqual({ message: reason, reported_at: clock });
      // 10.5 s after the first report: the first drop at least 10 s later.
      expect(later.backing_off!.reported_at).toBe(start + 10_500);
      await stub.stop();
    });

    it("stores each step's observations and drops by reason as env metrics when the step ends", async () => {
      const run = uniqueRun("feeder-metrics");
      await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 1024 });
      const name = `${run}/${ConstantRewardTestEnv.envName}/0`;
      const stub = bindings.ENV_FEEDER.get(bindings.ENV_FEEDER.idFromName(name));
      await stub.start(run, name, {
        envName: ConstantRewardTestEnv.envName,
        config: { group_size: GROUP_SIZE, max_num_workers: 2, worker_timeout: -1 },
        inference: INFERENCE,
      });
      expect(await runDurableObjectAlarm(stub)).toBe(true);
      const items = await inFlightMessages(stub);
      expect(items).toHaveLength(2);
      await consume(items);
      const metrics = async () =>
        (await json<MetricsResponse>(call(`/v1/runs/${run}/metrics?kind=env`))).series;
      // Nothing until the step ends.
      expect(await runDurableObjectAlarm(stub)).toBe(true);
      expect(await metrics()).toEqual([]);

      await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 1024, starting_step: 1 });
      expect(await runDurableObjectAlarm(stub)).toBe(true);
      const series = await metrics();
      const value = (metric: string) => {
        const s = series.find((x) => x.name === metric);
        expect(s, metric).toBeDefined();
        expect(s!.steps).toEqual([0]);
        return s!.values[0];
      };
      expect(value("groups_per_item_mean")).toBe(GROUPS_PER_CONSTANT_ITEM);
      // At least one per item consumed here. The real queue also delivers issued items to the
      // Worker's own consumer (items issued by the later ticks too), so more may be counted.
      expect(value("groups_per_item_count")).toBeGreaterThanOrEqual(2);
      const drops = series.filter((s) => s.name.startsWith("drops/"));
      expect(drops).toHaveLength(1);
      expect(drops[0]!.name).toMatch(/^drops\/all scores identical/);
      const dropped = drops[0]!.values[0]!;
      expect(dropped).toBeGreaterThanOrEqual(2 * GROUPS_PER_CONSTANT_ITEM);
      expect(dropped % GROUPS_PER_CONSTANT_ITEM).toBe(0);
      await stub.stop();
    });
  });
});
