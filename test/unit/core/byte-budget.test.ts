import { describe, expect, it } from "vitest";
import { ByteBudget } from "../../../src/core/concurrency/byte-budget";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("ByteBudget", () => {
  it("never holds more than its limit, serves waiters in order, and runs oversized work alone", async () => {
    const budget = new ByteBudget(10, 1);
    let held = 0;
    let maxHeld = 0;
    const order: string[] = [];
    const job = (name: string, bytes: number, ms: number) =>
      budget.run(bytes, async () => {
        held += Math.min(bytes, 10);
        maxHeld = Math.max(maxHeld, held);
        order.push(name);
        await sleep(ms);
        held -= Math.min(bytes, 10);
        return name;
      });
    const results = await Promise.all([
      job("a", 6, 30),
      job("b", 6, 10), // must wait for a
      job("c", 3, 10), // fits beside a, but b is first in line
      job("huge", 100, 10), // larger than the limit: alone
      job("d", 1, 5),
    ]);
    expect(results).toEqual(["a", "b", "c", "huge", "d"]);
    expect(order).toEqual(["a", "b", "c", "huge", "d"]);
    expect(maxHeld).toBeLessThanOrEqual(10);
    expect(budget.reserved).toBe(0);
    expect(budget.waiting).toBe(0);
  });

  it("releases the bytes of work that fails", async () => {
    const budget = new ByteBudget(10, 1);
    await expect(
      budget.run(8, async () => {
        throw new Error("bad body");
      }),
    ).rejects.toThrow("bad body");
    expect(budget.reserved).toBe(0);
    expect(await budget.run(8, async () => "next")).toBe("next");
  });
});
