import { describe, expect, it } from "vitest";
import {
  checkEvaluation,
  describeRegression,
  guardActionSchema,
} from "../../../src/core/closed-loop/regression-guard";

describe("regression guard", () => {
  it("takes the first value of each metric as its baseline", () => {
    const check = checkEvaluation(new Map(), 0, 10, { accuracy: 0.8, reward: 0.5 }, 0.95);
    expect(check).toEqual({
      newBaselines: [
        { metric: "accuracy", value: 0.8 },
        { metric: "reward", value: 0.5 },
      ],
      regressions: [],
    });
  });

  it("flags a value below factor × baseline, not one at or above it", () => {
    const baselines = new Map([
      ["accuracy", 0.8],
      ["reward", 0.5],
    ]);
    const check = checkEvaluation(baselines, 2, 20, { accuracy: 0.75, reward: 0.475 }, 0.95);
    expect(check.newBaselines).toEqual([]);
    expect(check.regressions).toHaveLength(1);
    expect(check.regressions[0]).toMatchObject({
      envId: 2,
      step: 20,
      metric: "accuracy",
      value: 0.75,
      baseline: 0.8,
    });
    expect(check.regressions[0]!.threshold).toBeCloseTo(0.76);
  });

  it("does not guard metrics whose baseline is not above zero", () => {
    const check = checkEvaluation(new Map([["loss", -1]]), 0, 1, { loss: -5 }, 0.95);
    expect(check.regressions).toEqual([]);
  });

  it("flags a lower-is-better metric (exact name or prefix) above baseline ÷ factor", () => {
    const baselines = new Map([
      ["eval/loss", 2],
      ["eval/err_math", 0.1],
      ["accuracy", 0.8],
    ]);
    const lower = ["eval/loss", "eval/err_*"];
    const fine = checkEvaluation(
      baselines,
      0,
      7,
      { "eval/loss": 2.1, "eval/err_math": 0.05, accuracy: 0.9 },
      0.95,
      lower,
    );
    // 2.1 is within 2 ÷ 0.95 ≈ 2.105; a falling error rate is an improvement.
    expect(fine.regressions).toEqual([]);
    const worse = checkEvaluation(
      baselines,
      0,
      8,
      { "eval/loss": 2.2, "eval/err_math": 0.2, accuracy: 0.9 },
      0.95,
      lower,
    );
    expect(worse.regressions.map((r) => r.metric)).toEqual(["eval/loss", "eval/err_math"]);
    expect(worse.regressions[0]!.threshold).toBeCloseTo(2 / 0.95);
    expect(describeRegression(worse.regressions[0]!, { type: "alert" })).toContain(
      "eval/loss = 2.2 at step 8 rose above",
    );
    // Without the list the same falling loss would be read as higher-is-better.
    expect(
      checkEvaluation(baselines, 0, 9, { "eval/loss": 1 }, 0.95).regressions.map((r) => r.metric),
    ).toEqual(["eval/loss"]);
  });

  it("describes the regression and the action taken", () => {
    const [r] = checkEvaluation(new Map([["acc", 1]]), 1, 5, { acc: 0.5 }, 0.9).regressions;
    expect(describeRegression(r!, { type: "pause_env", env_id: 1 })).toBe(
      "env 1 acc = 0.5 at step 5 fell below 0.9 (baseline 1); env paused",
    );
  });

  it("validates actions", () => {
    expect(guardActionSchema.safeParse({ type: "raise_replay", fraction: 0.5 }).success).toBe(true);
    expect(guardActionSchema.safeParse({ type: "raise_replay", fraction: 2 }).success).toBe(false);
    expect(guardActionSchema.safeParse({ type: "set_weights", weights: { x: 1 } }).success).toBe(
      false,
    );
    expect(guardActionSchema.safeParse({ type: "reboot" }).success).toBe(false);
  });
});
