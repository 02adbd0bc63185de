/**
 * The engine's sampling guard (src/engine/sampling-guard.ts) on a stand-in for node-llama-cpp's
 * native context that records which samplings overlap: after each decode the first sampling runs
 * alone, the batch's others run together after it, and a failed first one does not block them.
 * (The race itself, on llama.cpp, is in the engine e2e tests' logprob comparisons.)
 */
import { describe, expect, it } from "vitest";
import {
  guardOutputReorder,
  type NativeContext,
  nativeContextOf,
} from "../../../src/engine/sampling-guard";

/** A native context whose samplings finish only when the test says, recording the overlaps. */
function recordingContext() {
  const running = new Set<string>();
  const overlaps: string[][] = [];
  const finish = new Map<string, (ok: boolean) => void>();
  // Inherited read-only, as node-llama-cpp's native methods are.
  const methods: NativeContext = {
    decodeBatch: async () => "decoded",
    sampleToken: (name) =>
      new Promise((resolve, reject) => {
        running.add(name as string);
        overlaps.push([...running].sort());
        finish.set(name as string, (ok) => {
          running.delete(name as string);
          if (ok) resolve(`${name}-token`);
          else reject(new Error(`${name} failed`));
        });
      }),
  };
  const native = Object.create(Object.freeze(methods)) as NativeContext;
  return { native, overlaps, finish: (name: string, ok = true) => finish.get(name)?.(ok) };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("guardOutputReorder", () => {
  it("runs the first sampling after a decode alone, then the rest of the batch together", async () => {
    const { native, overlaps, finish } = recordingContext();
    guardOutputReorder(native);

    expect(await native.decodeBatch()).toBe("decoded");
    const a = native.sampleToken("a");
    const b = native.sampleToken("b");
    const c = native.sampleToken("c");
    await settle();
    expect(overlaps).toEqual([["a"]]);
    finish("a");
    await settle();
    expect(overlaps).toEqual([["a"], ["b"], ["b", "c"]]);
    finish("b");
    finish("c");
    expect(await Promise.all([a, b, c])).toEqual(["a-token", "b-token", "c-token"]);

    // the next decode: its first sampling runs alone again
    await native.decodeBatch();
    const d = native.sampleToken("d");
    const e = native.sampleToken("e");
    await settle();
    expect(overlaps.slice(3)).toEqual([["d"]]);
    finish("d");
    await settle();
    expect(overlaps.slice(3)).toEqual([["d"], ["e"]]);
    finish("e");
    expect(await Promise.all([d, e])).toEqual(["d-token", "e-token"]);
  });

  it("a failed first sampling fails alone; the batch's others still run", async () => {
    const { native, overlaps, finish } = recordingContext();
    guardOutputReorder(native);
    await native.decodeBatch();
    const a = native.sampleToken("a");
    const b = native.sampleToken("b");
    await settle();
    finish("a", false);
    await expect(a).rejects.toThrow("a failed");
    await settle();
    expect(overlaps).toEqual([["a"], ["b"]]);
    finish("b");
    expect(await b).toBe("b-token");
  });

  it("a first sampling that throws before it starts leaves the next one to run alone", async () => {
    const { native, overlaps, finish } = recordingContext();
    const methods = Object.getPrototypeOf(native) as NativeContext;
    let refuse = true;
    const refusing = Object.create({
      decodeBatch: methods.decodeBatch,
      sampleToken: (name: unknown) => {
        if (refuse) {
          refuse = false;
          throw new TypeError("bad sampler");
        }
        return methods.sampleToken(name);
      },
    }) as NativeContext;
    guardOutputReorder(refusing);
    await refusing.decodeBatch();
    expect(() => refusing.sampleToken("a")).toThrow("bad sampler");
    const b = refusing.sampleToken("b");
    const c = refusing.sampleToken("c");
    await settle();
    expect(overlaps).toEqual([["b"]]);
    finish("b");
    await settle();
    expect(overlaps).toEqual([["b"], ["c"]]);
    finish("c");
    expect(await Promise.all([b, c])).toEqual(["b-token", "c-token"]);
  });

  it("refuses a context without the native methods it wraps, naming the file to update", () => {
    expect(() => nativeContextOf({})).toThrow(/_ctx\.decodeBatch.*sampling-guard\.ts/);
    const native = { decodeBatch: async () => 1, sampleToken: async () => 2 };
    expect(nativeContextOf({ _ctx: native })).toBe(native);
  });
});
