import { describe, expect, it } from "vitest";
import { demoTrainStep, groupShapeProblems, grpoAdvantages } from "../../../src/cli/demo-trainer";

describe("demo trainer", () => {
  it("computes zero-mean unit-std GRPO advantages", () => {
    const adv = grpoAdvantages([1, -1, 1, -1]);
    expect(adv.map((a) => Math.round(a * 1e4) / 1e4)).toEqual([1, -1, 1, -1]);
    expect(grpoAdvantages([2, 2])).toEqual([0, 0]);
  });

  it("reports misaligned masks and logprobs", () => {
    const problems = groupShapeProblems({
      tokens: [[1, 2], [3]],
      masks: [
        [1, 2],
        [3, 4],
      ],
      scores: [1, 0],
      inference_logprobs: [
        [0, 0],
        [0, 0],
      ],
    });
    expect(problems).toEqual([
      "masks[1] length ≠ tokens[1] length",
      "inference_logprobs[1] length ≠ tokens[1]",
    ]);
  });

  it("counts trainable tokens and sequences of a batch", () => {
    const result = demoTrainStep([
      {
        tokens: [
          [1, 2, 3],
          [4, 5, 6],
        ],
        masks: [
          [-100, 2, 3],
          [-100, -100, 6],
        ],
        scores: [1, 0],
      },
    ]);
    expect(result).toMatchObject({
      groups: 1,
      sequences: 2,
      trainableTokens: 3,
      meanScore: 0.5,
      problems: [],
    });
    expect(result.meanAbsAdvantage).toBeCloseTo(1, 4);
  });
});
