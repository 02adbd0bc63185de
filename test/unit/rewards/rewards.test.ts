import { describe, expect, it } from "vitest";
import {
  AccuracyReward,
  advantagesPerToken,
  answersEquivalent,
  applyLengthPenaltyIfAllCorrect,
  CombinedReward,
  computeStats,
  discountedReturns,
  extractFinalAnswer,
  FormatReward,
  grpoAdvantages,
  isThinkingFormat,
  processSupervisionAdvantages,
  ReasoningStepsReward,
  RepetitionPenaltyReward,
  rewardRegistry,
  ThinkingFormatReward,
  thresholdLengthFactor,
} from "../../../src/env-sdk/rewards";

describe("math answers", () => {
  it("extracts boxed (nested), answer tags and ####, ignoring thinking", () => {
    expect(extractFinalAnswer("so \\boxed{\\frac{1}{2}} done")).toBe("\\frac{1}{2}");
    expect(extractFinalAnswer("\\boxed{1} then \\boxed{2}")).toBe("2");
    expect(extractFinalAnswer("<answer> 42 </answer>")).toBe("42");
    expect(extractFinalAnswer("work\n#### 1,234")).toBe("1,234");
    expect(extractFinalAnswer("<think>\\boxed{9}</think> no answer")).toBeNull();
  });

  it("treats numerically and simply-symbolically equal answers as equal", () => {
    expect(answersEquivalent("1/2", "0.5")).toBe(true);
    expect(answersEquivalent("\\frac{1}{2}", "0.5")).toBe(true);
    expect(answersEquivalent("\\dfrac{3}{4}", "3/4")).toBe(true);
    expect(answersEquivalent("1,234", "1234")).toBe(true);
    expect(answersEquivalent("$18", "18")).toBe(true);
    expect(answersEquivalent("50%", "0.5")).toBe(true);
    expect(answersEquivalent("50\\%", "50")).toBe(true);
    expect(answersEquivalent("18 apples", "18")).toBe(true);
    expect(answersEquivalent("-7", "7")).toBe(false);
    expect(answersEquivalent("12,34", "1234")).toBe(false);
    expect(answersEquivalent("\\text{Paris}", "paris")).toBe(true);
    expect(answersEquivalent("London", "Paris")).toBe(false);
  });
});

describe("reward functions", () => {
  it("accuracy uses the post-think answer, GSM8K gold and hedging limit", () => {
    const acc = new AccuracyReward();
    const out = acc.compute(
      [
        "<think>maybe \\boxed{3}</think> \\boxed{4}",
        "\\boxed{3}",
        "no answer",
        { role: "assistant", content: "#### 4" },
      ],
      { solution: "2 + 2 = 4 #### 4" },
    );
    expect(out).toEqual([1, 0, 0, 1]);
    expect(
      new AccuracyReward({ maxBoxed: 1 }).compute(["\\boxed{4} \\boxed{4}"], { solution: "4" }),
    ).toEqual([0]);
    expect(acc.compute(["\\boxed{1}", "\\boxed{2}"], { ground_truth: ["1", "1"] })).toEqual([1, 0]);
  });

  it("format and thinking format", () => {
    expect(new FormatReward().compute(["<answer>x</answer>", "plain"])).toEqual([1, 0]);
    expect(
      new FormatReward({ requireAllTags: true }).compute([
        "<think>a</think><answer>b</answer>",
        "<answer>b</answer>",
      ]),
    ).toEqual([1, 0]);
    expect(isThinkingFormat("<think>reason</think>answer")).toBe(true);
    expect(isThinkingFormat("<think> </think>answer")).toBe(false);
    expect(isThinkingFormat("<think>a</think>")).toBe(false);
    expect(isThinkingFormat("<think>a</think>x<think>b</think>y")).toBe(false);
    expect(isThinkingFormat("pre <think>a</think> y")).toBe(false);
    expect(new ThinkingFormatReward({ rewardValue: 0.5 }).compute(["<think>a</think> b"])).toEqual([
      0.5,
    ]);
  });

  it("reasoning steps rewards structure", () => {
    const [structured, flat] = new ReasoningStepsReward().compute([
      "Step 1: read. Step 2: compute the total first. Step 3: then check. Finally we answer with care.",
      "42",
    ]);
    expect(structured).toBeGreaterThan(0.8);
    expect(flat).toBe(0);
  });

  it("repetition penalty", () => {
    const rep = new RepetitionPenaltyReward();
    expect(rep.penalty("too short")).toBe(-0.1);
    expect(
      rep.penalty(
        "The cat sat on the mat and looked around the quiet room for a while before sleeping.",
      ),
    ).toBe(0);
    expect(
      rep.penalty("I like this very much. I like this very much. I like this very much."),
    ).toBeLessThan(-0.6);
    expect(rep.penalty("go go go go go go go go go go go go go go")).toBeLessThan(-0.5);
  });

  it("threshold length penalty", () => {
    expect(thresholdLengthFactor(400, 1000)).toBe(1);
    expect(thresholdLengthFactor(500, 1000)).toBe(1);
    expect(thresholdLengthFactor(750, 1000)).toBeCloseTo(0.5);
    expect(thresholdLengthFactor(1000, 1000)).toBe(0);
    expect(applyLengthPenaltyIfAllCorrect([1, 1], [100, 750], 1000)).toEqual([1, 0.5]);
    expect(applyLengthPenaltyIfAllCorrect([1, -1], [100, 750], 1000)).toEqual([1, -1]);
  });
});

describe("registry and combination", () => {
  it("creates the right class per name (Atropos r1 bug fixed) and honours sub-weights", () => {
    expect(rewardRegistry.create("ReasoningSteps")).toBeInstanceOf(ReasoningStepsReward);
    expect(rewardRegistry.create("reasoning_steps")).toBeInstanceOf(ReasoningStepsReward);
    const r1 = rewardRegistry.create("r1");
    expect(r1).toBeInstanceOf(CombinedReward);
    expect(
      r1.compute(["<think>t</think> \\boxed{4}", "\\boxed{4}", "<think>t</think> 5"], {
        solution: "4",
      }),
    ).toEqual([1.5, 1, 0.5]);
    const combined = rewardRegistry.create({
      type: "combined",
      params: {
        rewards: [
          { type: "format", weight: 2 },
          { type: "accuracy", weight: 0.5 },
        ],
        normalization: "sum",
      },
    });
    expect(combined.compute(["<answer>4</answer>", "nothing"], { solution: "4" })).toEqual([
      (2 + 0.5) / 2.5,
      0,
    ]);
    expect(() => rewardRegistry.create("nope")).toThrow(/available/);
  });

  it("skips a throwing sub-reward and min-max normalises", () => {
    const boom = {
      name: "boom",
      weight: 1,
      compute: () => {
        throw new Error("x");
      },
    };
    const c = new CombinedReward([boom, new FormatReward()], { normalization: "minmax" });
    expect(c.compute(["<answer>a</answer>", "b"])).toEqual([1, 0]);
    expect(rewardRegistry.score({ type: "format", weight: 3 }, ["<think>x</think>"])).toEqual([3]);
  });
});

describe("advantages", () => {
  it("GRPO normalises within the group", () => {
    const adv = grpoAdvantages([1, 0, 0, 1]);
    expect(adv[0]).toBeCloseTo(1, 4);
    expect(adv[1]).toBeCloseTo(-1, 4);
    expect(grpoAdvantages([2, 2, 2])).toEqual([0, 0, 0]);
    expect(computeStats([[1, 2], [3]])).toEqual({ mean: 2, variance: 2 / 3 });
  });

  it("process supervision: global normalisation then reverse cumulative / discounted sums", () => {
    expect(discountedReturns([1, 1, 1], 0.5)).toEqual([1.75, 1.5, 1]);
    const adv = processSupervisionAdvantages([[1, 0], [0]]);
    // mean 1/3, std √(2/9): normalised [√2, -1/√2], [-1/√2]
    const a = Math.SQRT2;
    const b = -1 / Math.SQRT2;
    expect(adv[0]![0]).toBeCloseTo(a + b, 6);
    expect(adv[0]![1]).toBeCloseTo(b, 6);
    expect(adv[1]![0]).toBeCloseTo(b, 6);
    expect(() => processSupervisionAdvantages([[1], [1]])).toThrow(/std/);
    expect(processSupervisionAdvantages([[1], [1]], { onZeroStd: "zeros" })).toEqual([[0], [0]]);
  });

  it("spreads per-turn advantages over trainable spans", () => {
    expect(advantagesPerToken([-100, 5, 6, -100, -100, 7, -100, 8], [0.5, -1])).toEqual([
      0, 0.5, 0.5, 0, 0, -1, 0, -1,
    ]);
  });
});
