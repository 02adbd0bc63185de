import { describe, expect, it } from "vitest";
import { minimumSequences, packBatch } from "../../../src/core/batching/packing";
import { earliestExactSubset } from "../../../src/core/batching/subset-sum";
import { randomUuid128Digits } from "../../../src/core/codecs/uuid128";
import {
  canonicalGroupJson,
  canonicalGroupPieces,
  floatArrayJson,
  GROUP_KEYS,
} from "../../../src/core/wire/canonical-group";

const q = (sizes: number[], env: number | null = 0) =>
  sizes.map((size, i) => ({ id: i + 1, envId: env, size }));

describe("earliestExactSubset", () => {
  it("prefers the oldest items (Atropos' DP preferred the newest)", () => {
    expect(earliestExactSubset([3, 2, 2, 2], 4)).toEqual([1, 2]);
    expect(earliestExactSubset([3, 1, 4], 5)).toEqual([1, 2]);
    expect(earliestExactSubset([5, 7], 4)).toBeNull();
    expect(earliestExactSubset([], 0)).toEqual([]);
  });

  it("finds sums across word boundaries of the bitset", () => {
    const sizes = [33, 40, 31, 64, 1, 95];
    const chosen = earliestExactSubset(sizes, 128)!;
    expect(chosen.reduce((s, i) => s + sizes[i]!, 0)).toBe(128);
    expect(chosen).toEqual([0, 2, 3]);
  });

  it("agrees with brute force on random inputs", () => {
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let t = 0; t < 300; t++) {
      const sizes = Array.from(
        { length: 1 + Math.floor(rand() * 9) },
        () => 1 + Math.floor(rand() * 16),
      );
      const target = 1 + Math.floor(rand() * 40);
      let best: number[] | null = null;
      for (let mask = 0; mask < 1 << sizes.length; mask++) {
        const idx = sizes.map((_, i) => i).filter((i) => mask & (1 << i));
        if (idx.reduce((s, i) => s + sizes[i]!, 0) !== target) continue;
        if (!best || (idx.join(",") < best.join(",") && lexLess(idx, best))) best = idx;
      }
      const got = earliestExactSubset(sizes, target);
      expect(got === null).toBe(best === null);
      if (got && best) expect(got).toEqual(best);
    }
  });
});

function lexLess(a: number[], b: number[]): boolean {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return a.length < b.length;
}

describe("packBatch", () => {
  it("packs any mix of sizes that sums to the batch size, oldest first", () => {
    expect(packBatch(q([4, 4, 2, 2]), 6)).toEqual({ ok: true, ids: [1, 3], sequences: 6 });
    expect(packBatch(q([4, 8, 2, 4, 2, 8]), 16)).toMatchObject({ ok: true, ids: [1, 2, 3, 5] });
  });

  it("says why nothing can be formed", () => {
    const waiting = packBatch(q([4]), 8);
    expect(waiting.ok).toBe(false);
    expect(!waiting.ok && waiting.reason).toContain("4 batchable sequence(s) queued");
    const odd = packBatch(q([4, 4, 4]), 6);
    expect(!odd.ok && odd.reason).toContain(
      "no combination of queued group sizes sums to batch_size 6 (queued: 3×4)",
    );
    const big = packBatch(q([16, 2]), 8);
    expect(!big.ok && big.reason).toContain("can never be batched");
  });

  it("reserves per-env minimums before filling the rest", () => {
    const queue = [
      ...q([2, 2, 2, 2], 0),
      { id: 9, envId: 1, size: 2 },
      { id: 10, envId: 1, size: 2 },
    ];
    const packed = packBatch(queue, 8, [{ envId: 1, name: "b", fraction: 0.5 }]);
    expect(packed).toEqual({ ok: true, ids: [1, 2, 9, 10], sequences: 8 });
    const starving = packBatch(q([2, 2, 2, 2], 0), 8, [{ envId: 1, name: "b", fraction: 0.25 }]);
    expect(!starving.ok && starving.reason).toContain("env 'b' (env_id 1)");
  });

  it("scales over-subscribed minimums like Atropos", () => {
    const mins = minimumSequences(
      8,
      [
        { envId: 0, name: "a", fraction: 0.75 },
        { envId: 1, name: "b", fraction: 0.75 },
      ],
      new Map([
        [0, 1],
        [1, 1],
      ]),
    );
    expect([...mins.values()]).toEqual([4, 4]);
  });
});

describe("wire encodings", () => {
  it("writes integral floats with .0 and leaves other numbers alone", () => {
    expect(floatArrayJson([1, 0.5, -2, 1e21, -0])).toBe("[1.0,0.5,-2.0,1e+21,0.0]");
    expect(floatArrayJson([[1, 2], [3.25]])).toBe("[[1.0,2.0],[3.25]]");
    expect(floatArrayJson([1, null, "x", 2.5, Number.NaN])).toBe('[1.0,null,"x",2.5,null]');
    expect(floatArrayJson([])).toBe("[]");
    expect(floatArrayJson([0.5, 7])).toBe("[0.5,7.0]");
  });

  it("writes floats exactly as stringify + 'integral gets .0' would, for random arrays", () => {
    // The previous implementation, kept as the oracle.
    const oracle = (v: unknown) => JSON.stringify(v).replace(/(?<=[[,])(-?\d+)(?=[\],])/g, "$1.0");
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pick = [1, -1, 0, -0, 1e21, -1e22, 1e-7, 123456789, 0.1 + 0.2, -2.5e-300, 1e300];
    for (let round = 0; round < 200; round++) {
      const rows = Array.from({ length: 1 + Math.floor(next() * 4) }, () =>
        Array.from({ length: Math.floor(next() * 30) }, () =>
          next() < 0.3
            ? pick[Math.floor(next() * pick.length)]!
            : (next() - 0.5) * 10 ** (next() * 8),
        ),
      );
      expect(floatArrayJson(rows)).toBe(oracle(rows));
      expect(floatArrayJson(rows[0])).toBe(oracle(rows[0]));
    }
  });

  it("emits exactly the 14 Atropos keys with nulls, taking env_id from the record", () => {
    const json = canonicalGroupJson({ tokens: [[1]], masks: [[1]], scores: [1], env_id: 5 }, 2);
    const parsed = JSON.parse(json);
    expect(Object.keys(parsed)).toHaveLength(14);
    expect(parsed.env_id).toBe(2);
    expect(json).toContain('"scores":[1.0]');
    expect(parsed.distill_logprobs).toBeNull();
  });

  it("streams a group in row-sized pieces that concatenate to exactly the served JSON", () => {
    // The whole-string serializer the pieces replaced, kept as the oracle.
    const floatKeys = new Set([
      "scores",
      "advantages",
      "ref_logprobs",
      "inference_logprobs",
      "distill_logprobs",
    ]);
    const oracle = (group: Record<string, unknown>, envId: number | null) =>
      `{${GROUP_KEYS.map((key) => {
        const value = key === "env_id" ? envId : (group[key] ?? null);
        const json =
          value !== null && floatKeys.has(key) ? floatArrayJson(value) : JSON.stringify(value);
        return `"${key}":${json}`;
      }).join(",")}}`;
    const group = {
      tokens: [[1, 2, 3], [4], []],
      masks: [[-100, 2, 3], [4], []],
      scores: [1, -0.5, 0],
      advantages: [[0.5, 1], [2], []],
      inference_logprobs: [[-0.25, 0, -1e-9], [-3], []],
      messages: [
        [{ role: "user", content: 'say "hi"\n' }],
        [],
        [{ role: "assistant", content: "" }],
      ],
      generation_params: { temperature: 1 },
      overrides: [{ set_advantage_to_zero: true }, {}, {}],
      group_overrides: { group_size: 3 },
      images: null,
      distill_token_ids: [[[1, 2]], [[3]], [[]]],
      distill_logprobs: [[[-1, -0.5]], [[-2]], [[]]],
      seed: 42,
    };
    for (const [input, envId] of [
      [group, 7],
      [{ tokens: [], masks: [], scores: [] }, null],
      [{ tokens: [[5]], masks: [[5]], scores: [2] }, 0],
    ] as const) {
      const pieces = Array.from(canonicalGroupPieces(input, envId), (p) => p.text);
      expect(pieces.join("")).toBe(oracle(input, envId));
      expect(canonicalGroupJson(input, envId)).toBe(oracle(input, envId));
    }
    // A matrix is split per row: no piece holds more than one sequence.
    const pieces = Array.from(canonicalGroupPieces(group, 7));
    expect(pieces).toContainEqual({ text: "[1,2,3]", floats: false });
    // Rows of a float field with mostly distinct values are marked (compressed by Huffman coding
    // alone); whole-number rows, like a prompt's 1.0s, are not (LZ77 shortens them).
    expect(pieces).toContainEqual({ text: "[-0.25,0.0,-1e-9]", floats: true });
    expect(pieces).toContainEqual({ text: ",[2.0]", floats: false });
    expect(pieces.some((p) => p.text.includes("seed"))).toBe(false);
  });

  it("produces 128-bit version-4 uuids as digits", () => {
    const digits = randomUuid128Digits();
    const value = BigInt(digits);
    expect(value < 2n ** 128n).toBe(true);
    expect((value >> 76n) & 0xfn).toBe(4n);
  });
});
