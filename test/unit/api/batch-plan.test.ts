import { describe, expect, it } from "vitest";
import { activeAllocations, planBatch } from "../../../src/api/batch-plan";
import type { EnvRow } from "../../../src/api/storage/runs";

const now = 1_000_000;

function envRow(envId: number, over: Partial<EnvRow> = {}): EnvRow {
  return {
    run: "r",
    envId,
    desiredName: `e${envId}`,
    realName: `e${envId}_0`,
    envKey: null,
    maxTokenLength: 1024,
    weight: 1,
    groupSize: 4,
    minBatchAllocation: null,
    connected: true,
    paused: false,
    weightPinned: false,
    minBatchAllocationPinned: false,
    registeredAt: now,
    lastSeenAt: now,
    ...over,
  };
}

describe("activeAllocations", () => {
  it("keeps connected, recently seen, unpaused envs with a positive min_batch_allocation", () => {
    const envs = [
      envRow(0, { minBatchAllocation: 0.5 }),
      envRow(1),
      envRow(2, { minBatchAllocation: 0 }),
      envRow(3, { minBatchAllocation: 0.25, connected: false }),
      envRow(4, { minBatchAllocation: 0.25, lastSeenAt: now - 121_000 }),
      envRow(5, { minBatchAllocation: 0.25, paused: true }),
    ];
    expect(activeAllocations(envs, now, 120)).toEqual([{ envId: 0, name: "e0_0", fraction: 0.5 }]);
  });
});

describe("planBatch", () => {
  it("packs the window's oldest groups", () => {
    const window = [
      { id: 1, envId: 0, size: 4 },
      { id: 2, envId: 0, size: 4 },
      { id: 3, envId: 0, size: 4 },
    ];
    expect(planBatch(window, [], 8, [])).toEqual({ ok: true, ids: [1, 2], sequences: 8 });
  });

  it("merges an allocated env's groups from behind the window in FIFO order, once each", () => {
    const window = [
      { id: 1, envId: 0, size: 4 },
      { id: 2, envId: 0, size: 4 },
    ];
    const extra = [
      { id: 2, envId: 0, size: 4 },
      { id: 9, envId: 1, size: 4 },
    ];
    const allocations = [{ envId: 1, name: "e1_0", fraction: 0.5 }];
    expect(planBatch(window, extra, 8, allocations)).toEqual({
      ok: true,
      ids: [1, 9],
      sequences: 8,
    });
  });
});
