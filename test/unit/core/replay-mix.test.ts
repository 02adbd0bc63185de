import { describe, expect, it } from "vitest";
import type { QueuedGroupRef } from "../../../src/core/batching/packing";
import {
  mixBatch,
  type ReplayCandidate,
  replaySelections,
  replayTarget,
} from "../../../src/core/closed-loop/replay-mix";

const online = (n: number, size: number, from = 1): QueuedGroupRef[] =>
  Array.from({ length: n }, (_, i) => ({ id: from + i, envId: 0, size }));
const replay = (sizes: number[], from = 1000): ReplayCandidate[] =>
  sizes.map((size, i) => ({ id: from + i, size, priority: 1 - i / 100 }));
const sum = (ids: number[], sizes: Map<number, number>) =>
  ids.reduce((s, id) => s + sizes.get(id)!, 0);

describe("replay mixing", () => {
  it("targets the fraction of the batch's sequences", () => {
    expect(replayTarget(32, 0.3)).toBe(10);
    expect(replayTarget(32, 0)).toBe(0);
    expect(replayTarget(8, 1.5)).toBe(8);
  });

  it("takes the highest priorities first and stays within one group of the target", () => {
    const candidates: ReplayCandidate[] = [
      { id: 1, size: 4, priority: 0.8 },
      { id: 2, size: 4, priority: 0.95 },
      { id: 3, size: 4, priority: 0.9 },
    ];
    const [closest, other] = replaySelections(candidates, 10, 32);
    // 8 (two groups) and 12 (three) are both 2 away; the one under the target comes first.
    expect(closest!.map((c) => c.id)).toEqual([2, 3]);
    expect(other!.map((c) => c.id)).toEqual([2, 3, 1]);
  });

  it("forms an exact batch with about 30% replayed sequences for many batch and group sizes", () => {
    for (const batchSize of [8, 16, 32, 64]) {
      for (const groupSize of [1, 2, 4, 8]) {
        if (groupSize > batchSize) continue;
        const queue = online(64, groupSize);
        const buffer = replay(Array.from({ length: 64 }, () => groupSize));
        const mixed = mixBatch(queue, buffer, batchSize, 0.3);
        expect(mixed.ok).toBe(true);
        if (!mixed.ok) continue;
        const sizes = new Map([...queue, ...buffer].map((g) => [g.id, g.size]));
        const replayed = sum(mixed.replayIds, sizes);
        expect(sum(mixed.ids, sizes) + replayed).toBe(batchSize);
        expect(Math.abs(replayed - replayTarget(batchSize, 0.3))).toBeLessThanOrEqual(groupSize);
        expect(mixed.ids.every((id) => id < 1000)).toBe(true);
      }
    }
  });

  it("falls back to an online-only batch when the buffer is empty or nothing fits", () => {
    const queue = online(4, 4);
    expect(mixBatch(queue, [], 8, 0.3)).toEqual({
      ok: true,
      ids: [1, 2],
      replayIds: [],
      sequences: 8,
    });
    // A replayed group of 3 would leave 5, which groups of 4 cannot fill.
    const odd = mixBatch(queue, replay([3]), 8, 0.3);
    expect(odd).toMatchObject({ ok: true, replayIds: [] });
  });

  it("never forms a batch of replays alone, and waits when the online queue is short", () => {
    const none = mixBatch([], replay([4, 4]), 8, 1);
    expect(none.ok).toBe(false);
    const short = mixBatch(online(1, 2), replay([4]), 8, 0.5);
    expect(short).toMatchObject({ ok: false });
  });
});
