import { describe, expect, it } from "vitest";
import {
  atroposEvalCrossing,
  crossedMultiple,
  derivedBatchSize,
  resolveMaxNumWorkers,
  shouldPause,
  shouldTerminate,
  targetWorkerCount,
} from "../../../src/env-sdk/runtime/scheduler";

const status = (queue_size: number, self_queue_size = queue_size, max_group_size = 4) => ({
  queue_size,
  self_queue_size,
  max_group_size,
});

describe("scheduler math (Atropos' env-side worker formula)", () => {
  it("resolves max workers and derived batch size", () => {
    expect(resolveMaxNumWorkers({ max_num_workers: -1, max_num_workers_per_node: 8 }, 3)).toBe(24);
    expect(resolveMaxNumWorkers({ max_num_workers: 5, max_num_workers_per_node: 8 }, 3)).toBe(5);
    expect(derivedBatchSize(64, null, 0.25)).toBe(64);
    expect(derivedBatchSize(-1, { unallocated_fraction: 0.5 }, null)).toBe(-1);
    // worked example of /status-env (docs/API.md): unallocated 0.75 → env0 fills 0.75·8 = 6, env1 (min 0.25) fills 8
    expect(derivedBatchSize(8, { unallocated_fraction: 0.75 }, null)).toBe(6);
    expect(derivedBatchSize(8, { unallocated_fraction: 0.75 }, 0.25)).toBe(8);
  });

  it("terminates when step + queued whole batches exceed total_steps", () => {
    const base = { groupSize: 4, batchSize: 16, totalSteps: 10 };
    expect(shouldTerminate({ ...base, currentStep: 10, queueSize: 3 })).toBe(false); // 12//16 = 0
    expect(shouldTerminate({ ...base, currentStep: 10, queueSize: 4 })).toBe(true); // 16//16 = 1
    expect(shouldTerminate({ ...base, currentStep: 11, queueSize: 0 })).toBe(true);
  });

  it("pauses when M batches are queued unless the min allocation is still owed", () => {
    const args = {
      derivedBatchSize: 16,
      batchSize: 16,
      maxBatchesOffpolicy: 3,
      groupSize: 4,
      minBatchAllocation: null,
    };
    expect(shouldPause({ ...args, status: status(11) })).toBe(false); // 44 < 48
    expect(shouldPause({ ...args, status: status(12) })).toBe(true);
    expect(shouldPause({ ...args, derivedBatchSize: -1, status: status(0) })).toBe(true);
    expect(shouldPause({ ...args, maxBatchesOffpolicy: 0, status: status(100) })).toBe(false);
    // a = 0.5: owed = ceil(0.5·16·3/4)·(4//4) − S = 6 − S
    const alloc = { ...args, minBatchAllocation: 0.5 };
    expect(shouldPause({ ...alloc, status: status(12, 5) })).toBe(false);
    expect(shouldPause({ ...alloc, status: status(12, 6) })).toBe(true);
  });

  it("computes the add_train_workers target", () => {
    const args = {
      maxNumWorkers: 8,
      evalRunning: false,
      evalHandling: "STOP_TRAIN" as const,
      evalLimitRatio: 0.5,
      maxBatchesOffpolicy: 3,
      derivedBatchSize: 16,
      batchSize: 16,
      groupSize: 4,
      minBatchAllocation: null,
    };
    expect(targetWorkerCount({ ...args, status: status(0) })).toBe(8); // min(8, 12 − 0)
    expect(targetWorkerCount({ ...args, status: status(7) })).toBe(5); // min(8, 12 − 7)
    expect(targetWorkerCount({ ...args, status: status(20) })).toBe(-8);
    // max_batches_offpolicy ≤ 0 disables the off-policy bound instead of starting nothing.
    expect(targetWorkerCount({ ...args, maxBatchesOffpolicy: 0, status: status(20) })).toBe(8);
    expect(targetWorkerCount({ ...args, maxBatchesOffpolicy: -1, status: status(0) })).toBe(8);
    expect(targetWorkerCount({ ...args, evalRunning: true, status: status(0) })).toBe(0);
    expect(
      targetWorkerCount({
        ...args,
        evalRunning: true,
        evalHandling: "LIMIT_TRAIN",
        status: status(0),
      }),
    ).toBe(4);
    expect(
      targetWorkerCount({ ...args, evalRunning: true, evalHandling: "NONE", status: status(0) }),
    ).toBe(8);
    // a = 0.25, X = 4, S = 2: ceil(((ceil(0.25·16·3/4) + 1)·4 − floor(4·2)) / 4) = ceil((16 − 8)/4) = 2
    expect(targetWorkerCount({ ...args, minBatchAllocation: 0.25, status: status(20, 2) })).toBe(2);
  });

  it("detects eval/checkpoint crossings, including jumps Atropos misses", () => {
    expect(crossedMultiple(99, 100, 100)).toBe(100);
    expect(crossedMultiple(100, 150, 100)).toBeNull();
    expect(crossedMultiple(50, 160, 100)).toBe(100);
    expect(atroposEvalCrossing(50, 160, 100)).toBe(false); // the original's miss
    expect(crossedMultiple(50, 260, 100)).toBe(200);
    expect(crossedMultiple(5, 9, 0)).toBeNull();
  });
});
