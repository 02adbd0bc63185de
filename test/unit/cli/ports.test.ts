import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { ephemeralRange, freePort, pickPool, portIsFree } from "../../../scripts/ports.mjs";

describe("scripts/ports.mjs", () => {
  it("picks ports the kernel never hands to bind(0) or to an outgoing connection", async () => {
    const [low, high] = ephemeralRange();
    const [first, last] = pickPool();
    expect(last < low || first > high).toBe(true);
    const picked = [await freePort(), await freePort(), await freePort()];
    for (const port of picked) {
      expect(port).toBeGreaterThanOrEqual(first);
      expect(port).toBeLessThanOrEqual(last);
    }
    expect(new Set(picked).size).toBe(3);
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
