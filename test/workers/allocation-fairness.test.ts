import { describe, expect, it } from "vitest";
import { type EnvStatus, planWorkers } from "../../src/env-sdk/runtime/scheduler";
import { call, group, json, post, REGISTRATION, uniqueRun } from "./helpers";

interface SimEnv {
  name: string;
  groupSize: number;
  minBatchAllocation: number | null;
  envId: number;
  /** Ticks at which the in-flight groups finish, oldest first. */
  inFlight: number[];
}

const BATCH_SIZE = 64;
const MAX_NUM_WORKERS = 16;
const MAX_BATCHES_OFFPOLICY = 3;
/** Ticks one group takes to generate; the trainer pulls every TRAIN_TICKS ticks. */
const GROUP_TICKS = 3;
const TRAIN_TICKS = 5;

describe("min_batch_allocation fairness", () => {
  it("leaves an env without an allocation its share while another env holds 0.5", async () => {
    const run = uniqueRun("fair");
    const base = `/runs/${run}`;
    await post(`${base}/register`, { ...REGISTRATION, batch_size: BATCH_SIZE });
    const envs: SimEnv[] = [];
    for (const [name, groupSize, minBatchAllocation] of [
      ["a", 4, 0.5],
      ["b", 8, null],
    ] as const) {
      const res = await json<{ env_id: number }>(
        post(`${base}/register-env`, {
          max_token_length: 1024,
          desired_name: name,
          weight: 1,
          group_size: groupSize,
          min_batch_allocation: minBatchAllocation,
        }),
      );
      envs.push({ name, groupSize, minBatchAllocation, envId: res.env_id, inFlight: [] });
    }

    // Each env behaves like Atropos' BaseEnv: poll /status-env, then pause or size its worker
    // pool with the same formula; finished workers submit one group each. A slower trainer than
    // the envs keeps the queue at its off-policy bound, where starvation showed.
    let seed = 0;
    const batches: number[][] = [];
    for (let tick = 0; batches.length < 20 && tick < 400; tick++) {
      for (const env of envs) {
        const done = env.inFlight.filter((t) => t <= tick).length;
        env.inFlight = env.inFlight.filter((t) => t > tick);
        if (done > 0) {
          const groups = Array.from({ length: done }, () =>
            group(++seed, env.groupSize, env.envId),
          );
          expect((await post(`${base}/scored_data_list`, groups)).status).toBe(200);
        }
        const status = await json<EnvStatus>(call(`${base}/status-env?env_id=${env.envId}`));
        const plan = planWorkers({
          config: {
            group_size: env.groupSize,
            max_batches_offpolicy: MAX_BATCHES_OFFPOLICY,
            min_batch_allocation: env.minBatchAllocation,
            eval_handling: "NONE",
            eval_limit_ratio: 0.5,
          },
          status,
          batchSize: BATCH_SIZE,
          totalSteps: 1000,
          maxNumWorkers: MAX_NUM_WORKERS,
          evalRunning: false,
        });
        if (plan.action === "pause") env.inFlight = [];
        if (plan.action !== "fill") continue;
        const target = Math.max(0, plan.target);
        if (env.inFlight.length > target) env.inFlight.splice(0, env.inFlight.length - target);
        while (env.inFlight.length < target) env.inFlight.push(tick + GROUP_TICKS);
      }
      if (tick % TRAIN_TICKS === TRAIN_TICKS - 1) {
        const res = await json<{ batch: { env_id: number }[] | null }>(call(`${base}/batch`));
        if (res.batch) batches.push(res.batch.map((g) => g.env_id));
      }
    }

    expect(batches).toHaveLength(20);
    const [a, b] = envs as [SimEnv, SimEnv];
    for (const batch of batches) {
      // The allocation is still honoured: 0.5 × 64 sequences of env a's groups of 4.
      expect(batch.filter((id) => id === a.envId).length * a.groupSize).toBeGreaterThanOrEqual(32);
    }
    const withB = batches.filter((batch) => batch.includes(b.envId)).length;
    expect(withB).toBeGreaterThanOrEqual(10);
  }, 180_000);
});
