import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { ephemeralRange, freePort, pickPool, portIsFree } from "../../../scripts/ports.mjs";

describe("scripts/ports.mjs", () => {
  it("picks ports the kernel never hands to bind(0) or to an outgoing connection", async () => {
    const [low, high] = ephemeralRange();
    const [first, last] = pickPool();
    // A kernel that hands out nearly every port leaves no room outside its range.
    const room = low - 1024 >= 10_000 || 65_535 - high >= 10_000;
    expect(room ? last < low || first > high : first === 1024 && last === 65_535).toBe(true);
    const picked = [await freePort(), await freePort(), await freePort()];
    for (const port of picked) {
      expect(port).toBeGreaterThanOrEqual(first);
      expect(port).toBeLessThanOrEqual(last);
    }
    expect(new Set(picked).size).toBe(3);
  });

  it("never picks a port promised to a server that has not bound it yet", async () => {
    const promised = await freePort();
    // The walk goes on from the last pick: the next candidate is the promised port's neighbour,
    // so exclude the whole stretch the next picks would walk through.
    const exclude = Array.from({ length: 50 }, (_, i) => promised + 1 + i);
    const picked = await freePort("127.0.0.1", exclude);
    expect(exclude).not.toContain(picked);
    expect(picked).not.toBe(promised);
  });

  it("tells a port a server holds from a free one", async () => {
    const held = await freePort();
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(held, "127.0.0.1", resolve));
    try {
      expect(await portIsFree(held)).toBe(false);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    expect(await portIsFree(held)).toBe(true);
  });
});
