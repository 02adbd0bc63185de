import { describe, expect, it } from "vitest";
import { commonPrefixLength, exportRecords, selectDpo, selectSft } from "../../../src/cli/export";
import type { ScoredDataGroup } from "../../../src/core/wire/group-types";

const decode = (ids: number[]) => ids.map((i) => String.fromCharCode(96 + i)).join("");

function group(scores: number[]): ScoredDataGroup {
  // Shared prompt [1,2] ("ab"), then a completion unique to each sequence.
  const tokens = scores.map((_, i) => [1, 2, 3 + i, 3 + i]);
  return {
    tokens,
    masks: tokens.map((t) => t.map((x, j) => (j < 2 ? -100 : x))),
    scores,
    messages: scores.map((s, i) => [
      { role: "user", content: "q" },
      { role: "assistant", content: `a${i}:${s}` },
    ]),
  };
}

const base = { topN: 3, minScoreDiff: 0, allowNegativeScores: false, saveMessages: false, decode };

describe("sft selection", () => {
  it("keeps positive scores above the group minimum, best first, top N", () => {
    const records = selectSft(group([0.5, 1, -1, 0.2, 0.9]), base);
    expect(records.map((r) => r.score)).toEqual([1, 0.9, 0.5]);
    expect(records[0]).toEqual({ prefix: "ab", completion: "dd", score: 1 });
  });

  it("drops everything when scores are identical (score − min must exceed the diff)", () => {
    expect(selectSft(group([1, 1, 1]), base)).toEqual([]);
  });

  it("allows negative scores on request but never the group minimum", () => {
    const records = selectSft(group([-0.5, -1, -0.2]), { ...base, allowNegativeScores: true });
    expect(records.map((r) => r.score)).toEqual([-0.2, -0.5]);
  });

  it("applies the min score gap and writes messages in messages mode", () => {
    const records = selectSft(group([1, 0.1, 0]), {
      ...base,
      minScoreDiff: 0.5,
      saveMessages: true,
    });
    expect(records).toHaveLength(1);
    expect(records[0]!.messages).toEqual([
      { role: "user", content: "q" },
      { role: "assistant", content: "a0:1" },
    ]);
  });

  it("uses the prompt mask as prefix for a single sequence", () => {
    expect(commonPrefixLength(group([1]))).toBe(2);
    expect(commonPrefixLength(group([1, 0]))).toBe(2);
  });
});

describe("dpo selection", () => {
  it("pairs each top positive with a negative below pos − gap, each negative used once", () => {
    const records = selectDpo(group([1, 0.8, -1, 0.5]), {
      ...base,
      minScoreDiff: 0.5,
      random: () => 0,
    });
    // Negatives come from the 3 lowest (0.8, 0.5, -1); only -1 ("ee") is 0.5 below any positive,
    // and once paired with the best it is gone (atropos-dpo-gen removes used negatives).
    expect(records).toEqual([{ prefix: "ab", pos: "cc", score: 1, neg: "ee" }]);
    const two = selectDpo(group([1, 0.8, -1, -0.5]), {
      ...base,
      minScoreDiff: 0.5,
      random: () => 0,
    });
    expect(two).toEqual([
      { prefix: "ab", pos: "cc", score: 1, neg: "ff" },
      { prefix: "ab", pos: "dd", score: 0.8, neg: "ee" },
    ]);
  });

  it("yields no pair when no negative is far enough below", () => {
    expect(selectDpo(group([1, 0.9]), { ...base, minScoreDiff: 0.5, random: () => 0 })).toEqual([]);
  });

  it("is reproducible with a seed and honours maxRecords", () => {
    const groups = [group([1, -1, -1, 0.9]), group([1, -1, -0.5, 0.2])];
    const a = exportRecords("dpo", groups, { ...base, minScoreDiff: 0.5, seed: 7, maxRecords: 0 });
    const b = exportRecords("dpo", groups, { ...base, minScoreDiff: 0.5, seed: 7, maxRecords: 0 });
    expect(a).toEqual(b);
    expect(a.length).toBeGreaterThan(2);
    expect(
      exportRecords("dpo", groups, { ...base, minScoreDiff: 0.5, seed: 7, maxRecords: 2 }),
    ).toHaveLength(2);
  });

  it("text mode without a tokenizer says what to do", () => {
    expect(() => selectSft(group([1, 0]), { ...base, decode: undefined })).toThrow(/--tokenizer/);
  });
});
