import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Bindings } from "../../../src/api/bindings";
import { withInflated, withMemory } from "../../../src/api/memory-budget";
import { gunzipBounded } from "../../../src/core/codecs/gzip";

const env = {} as Bindings;

afterEach(() => {
  vi.useRealTimers();
});

describe("withInflated", () => {
  it("charges a gzip body by its inflated text, not its compressed size", async () => {
    vi.useFakeTimers();
    // 6 KB of gzip inflating to 6 MiB: 18 MiB of parse cost, over the whole 8 MiB budget.
    const raw = new Uint8Array(gzipSync(Buffer.alloc(6 * 2 ** 20, 0x20)));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let inflated = 0;
    const big = withInflated(
      env,
      { raw, gzip: true },
      (r) => gunzipBounded(r),
      async (bytes) => {
        inflated = bytes.byteLength;
        await gate;
      },
    );
    await vi.advanceTimersByTimeAsync(20);
    expect(inflated).toBe(6 * 2 ** 20);
    let small = false;
    const other = withMemory(env, 2 ** 20, async () => {
      small = true;
    });
    await vi.advanceTimersByTimeAsync(100);
    expect(small).toBe(false);
    release();
    await big;
    await vi.advanceTimersByTimeAsync(20);
    await other;
    expect(small).toBe(true);
  });
});
