/**
 * DatasetIterator: epochs in file or seeded order, a checkpoint that resumes the exact sequence
 * (also after a JSON round trip, as the EnvSession DO stores it), and lazy loading.
 */
import { describe, expect, it } from "vitest";
import { DatasetError, DatasetIterator } from "../../../src/env-sdk/datasets";

const ROWS = Array.from({ length: 10 }, (_, i) => i);

async function take<T>(iterator: DatasetIterator<T>, count: number): Promise<(T | null)[]> {
  const out: (T | null)[] = [];
  for (let i = 0; i < count; i++) out.push(await iterator.next());
  return out;
}

describe("DatasetIterator", () => {
  it("walks rows in order without shuffle and stops after `epochs`", async () => {
    const iterator = new DatasetIterator(ROWS, { shuffle: false, epochs: 2 });
    expect(await take(iterator, 20)).toEqual([...ROWS, ...ROWS]);
    expect(await iterator.next()).toBeNull();
    expect(iterator.cursor).toEqual({ epoch: 2, index: 0, seed: 0, size: 10 });
  });

  it("shuffles each epoch differently, deterministically per seed", async () => {
    const a = await take(new DatasetIterator(ROWS, { seed: 3 }), 30);
    expect(await take(new DatasetIterator(ROWS, { seed: 3 }), 30)).toEqual(a);
    expect(await take(new DatasetIterator(ROWS, { seed: 4 }), 30)).not.toEqual(a);
    const epochs = [a.slice(0, 10), a.slice(10, 20), a.slice(20, 30)];
    for (const epoch of epochs) expect([...epoch].sort((x, y) => x! - y!)).toEqual(ROWS);
    expect(epochs[0]).not.toEqual(epochs[1]);
    expect(epochs[0]).not.toEqual(ROWS);
  });

  it("resumes the exact sequence from a checkpoint, across an epoch boundary", async () => {
    const original = new DatasetIterator(ROWS, { seed: 11 });
    await take(original, 7);
    const saved = JSON.parse(JSON.stringify(original.saveCheckpoint()));
    expect(saved).toEqual({ epoch: 0, index: 7, seed: 11, size: 10 });
    const expected = await take(original, 15);

    // The checkpoint's seed wins over the configured one: the resumed order is the saved order.
    const resumed = new DatasetIterator(ROWS, { seed: 99 });
    resumed.loadCheckpoint(saved);
    expect(await take(resumed, 15)).toEqual(expected);
  });

  it("starts over with no checkpoint, restarts the epoch when the dataset size changed", async () => {
    const iterator = new DatasetIterator(ROWS, { shuffle: false });
    await take(iterator, 4);
    iterator.loadCheckpoint(undefined);
    expect(await iterator.next()).toBe(0);
    iterator.loadCheckpoint({ epoch: 3, index: 5, seed: 0, size: 12 });
    expect(iterator.cursor).toEqual({ epoch: 3, index: 0, seed: 0, size: 10 });
  });

  it("loads lazily, once, applying a checkpoint loaded before the rows", async () => {
    let loads = 0;
    const loader = async () => {
      loads++;
      return ROWS;
    };
    const original = new DatasetIterator(loader, { seed: 5 });
    expect(loads).toBe(0);
    expect(original.saveCheckpoint()).toEqual({ epoch: 0, index: 0, seed: 5, size: 0 });
    await Promise.all([original.next(), original.next(), original.next()]);
    expect(loads).toBe(1);
    const saved = original.saveCheckpoint();
    expect(saved).toEqual({ epoch: 0, index: 3, seed: 5, size: 10 });

    const resumed = new DatasetIterator(loader, { seed: 5 });
    resumed.loadCheckpoint(saved);
    expect(resumed.saveCheckpoint()).toEqual(saved);
    expect(await take(resumed, 12)).toEqual(await take(original, 12));
  });

  it("retries a failed load, and rejects a malformed checkpoint and an empty dataset", async () => {
    let fail = true;
    const flaky = new DatasetIterator(async () => {
      if (fail) throw new Error("network down");
      return ROWS;
    });
    await expect(flaky.next()).rejects.toThrow("network down");
    fail = false;
    expect(ROWS).toContain(await flaky.next());

    const iterator = new DatasetIterator(ROWS);
    expect(() => iterator.loadCheckpoint({ epoch: 0, index: -1, seed: 0, size: 10 })).toThrow(
      /"index" must be a non-negative integer, got -1/,
    );
    expect(() => iterator.loadCheckpoint({ epoch: 0, index: 0, size: 10 })).toThrow(
      /"seed" must be an integer, got undefined/,
    );
    expect(() => new DatasetIterator([])).toThrow(DatasetError);
    await expect(new DatasetIterator(async () => []).next()).rejects.toThrow(
      "dataset has no rows to iterate",
    );
  });
});
