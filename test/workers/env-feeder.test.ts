/**
 * EnvFeeder Durable Object ticks (driven with runDurableObjectAlarm): registration with the run,
 * feeding items to the queue, and evaluation when the run's step crosses steps_per_eval — with
 * STOP_TRAIN holding back new training items while it runs.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { parseServerConfig } from "../../src/core/server-config";
import type { EnvFeeder } from "../../src/worker/env-feeder";
import { call, json, post, REGISTRATION, uniqueRun } from "./helpers";
import { BigItemTestEnv, EvalTestEnv, evaluationControl } from "./test-envs";

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

    // The evaluation env loads its tokenizer first; release it once evaluate() is running.
    for (let i = 0; !evaluationControl.started; i++) {
      if (i > 600) throw new Error("evaluate() never started");
      await new Promise((r) => setTimeout(r, 50));
    }
    evaluationControl.released = true;
    for (let i = 0; i < 100; i++) {
      const { evals } = await json<{ evals: { step: number; metrics: Record<string, number> }[] }>(
        call(`/v1/runs/${run}/envs/0/evals`),
      );
      if (evals.length > 0) {
        expect(evals).toEqual([expect.objectContaining({ step: 2, metrics: { accuracy: 0.75 } })]);
        break;
      }
      if (i === 99) throw new Error("evaluation result never stored");
      await new Promise((r) => setTimeout(r, 50));
    }
    const after = await stub.describe();
    expect(after).toMatchObject({ eval_running: false, evaluations: 1 });
    await stub.stop();
    expect((await workerStatus()).worker_status).toBe("stopped");
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
});
