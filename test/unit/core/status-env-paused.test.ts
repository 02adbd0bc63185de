import { describe, expect, it } from "vitest";
import { computeStatusEnv, type EnvRecordForStatus } from "../../../src/core/wire/status-env";
import { BaseEnvConfigSchema } from "../../../src/env-sdk/config";
import { planWorkers } from "../../../src/env-sdk/runtime/scheduler";

const env = (envId: number, extra: Partial<EnvRecordForStatus> = {}): EnvRecordForStatus => ({
  envId,
  maxContextLen: 1000,
  weight: 1,
  connected: true,
  minBatchAllocation: null,
  groupSize: 4,
  ...extra,
});

const queue = [
  { envId: 0, sequences: 8, maxGroupSize: 4 },
  { envId: 1, sequences: 8, maxGroupSize: 4 },
];

describe("/status-env of a paused env", () => {
  it("reports a zero quota and leaves the other envs the whole weight and batch", () => {
    const envs = [env(0, { paused: true, minBatchAllocation: 0.5 }), env(1)];
    const paused = computeStatusEnv({ envId: 0, envs, queue, batchSize: 16, step: 3 });
    expect(paused).toMatchObject({ env_weight: 0, unallocated_fraction: -1, current_step: 3 });
    // queue_size stays the real one: it ends an env at total_steps and must not inflate.
    expect(paused.queue_size).toBe(4);
    const other = computeStatusEnv({ envId: 1, envs, queue, batchSize: 16, step: 3 });
    expect(other.env_weight).toBe(1);
    // The paused env's allocation is not reserved from the queue nor from the batch.
    expect(other.unallocated_fraction).toBe(1);
    expect(other.queue_size).toBe(4);
  });

  it("makes the Atropos worker formulas start nothing, with or without an allocation", () => {
    for (const allocation of [null, 0.5]) {
      const envs = [env(0, { paused: true, minBatchAllocation: allocation }), env(1)];
      const status = computeStatusEnv({ envId: 0, envs, queue, batchSize: 16, step: 0 });
      const plan = planWorkers({
        config: BaseEnvConfigSchema.parse({ group_size: 4, min_batch_allocation: allocation }),
        status,
        batchSize: 16,
        totalSteps: 100,
        maxNumWorkers: 8,
        evalRunning: false,
      });
      if (plan.action === "fill") expect(plan.target).toBeLessThanOrEqual(0);
      else expect(plan.action).toBe("pause");
    }
  });
});
