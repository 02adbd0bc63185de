import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ToyPolicyTrainer } from "../../../src/cli/demo-trainer";
import { createEnv, openInference } from "../../../src/cli/inference";
import type { ScoredDataGroup } from "../../../src/core/wire/group-types";
import { getEnvDefinition } from "../../../src/envs/index";
import {
  applyGradient,
  LOGIT_BOUND,
  logSoftmax,
  policyGradient,
  sampleIndex,
  splitLogprob,
  ToyPolicy,
} from "../../../src/sim/policy";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("toy policy math", () => {
  it("log-softmax is normalised and shift-invariant", () => {
    const lp = logSoftmax([1, 2, 3]);
    expect(lp.map(Math.exp).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    for (const [i, v] of logSoftmax([101, 102, 103]).entries()) expect(v).toBeCloseTo(lp[i]!, 12);
    expect(logSoftmax([0, 0])[0]).toBeCloseTo(Math.log(0.5), 12);
  });

  it("token logprobs sum to the answer's log-probability", () => {
    const parts = splitLogprob(Math.log(0.3), 7);
    expect(parts).toHaveLength(7);
    expect(parts.reduce((a, b) => a + b, 0)).toBeCloseTo(Math.log(0.3), 12);
  });

  it("samples follow the softmax; temperature 0 is greedy", () => {
    const lp = logSoftmax([0, Math.log(3)]); // p = 0.25, 0.75
    expect(sampleIndex(lp, 0.2)).toBe(0);
    expect(sampleIndex(lp, 0.3)).toBe(1);
    expect(sampleIndex(lp, 0.01, 0)).toBe(1);
  });

  it("a gradient step raises the logit of answers with positive advantage", () => {
    const keys = ["e/good", "e/bad"];
    const old = Math.log(0.5);
    const grad = policyGradient({}, [
      { sample: { keys, chosen: 0 }, advantage: 1, oldLogprob: old },
      { sample: { keys, chosen: 1 }, advantage: -1, oldLogprob: old },
    ]);
    // d/dz_good of mean(A·logπ) = ½[(1−½) + (−1)(0−½)] = ½
    expect(grad["e/good"]).toBeCloseTo(0.5, 12);
    expect(grad["e/bad"]).toBeCloseTo(-0.5, 12);
    const next = applyGradient({}, grad, 0.1);
    expect(next["e/good"]).toBeCloseTo(0.05, 12);
    expect(applyGradient({}, grad, 100)).toEqual({ "e/good": LOGIT_BOUND, "e/bad": -LOGIT_BOUND });
    expect(applyGradient({}, grad, 0)).toEqual({ "e/good": 0, "e/bad": 0 });
  });

  it("the ratio clip stops pushing an answer that already gained enough", () => {
    const keys = ["e/good", "e/bad"];
    const weights = { "e/good": 2 }; // π(good) ≈ 0.88 vs 0.5 when sampled: ratio 1.76 > 1.2
    const grad = policyGradient(weights, [
      { sample: { keys, chosen: 0 }, advantage: 1, oldLogprob: Math.log(0.5) },
    ]);
    expect(grad).toEqual({});
  });

  it("the most recent registration whose match occurs in the prompt answers", () => {
    const policy = new ToyPolicy();
    policy.register("a", { match: "Q1", candidates: [{ text: "old" }] });
    policy.register("a", { match: "Q1", candidates: [{ text: "new" }] });
    policy.register("b", { match: "Q2", candidates: (p) => [{ text: `saw ${p.length}` }] });
    expect(policy.candidatesFor("… Q1 …")?.candidates[0]?.text).toBe("new");
    expect(policy.candidatesFor("Q2!")?.candidates[0]?.text).toBe("saw 3");
    expect(policy.candidatesFor("nothing")).toBeNull();
  });

  it("loaded weights change the distribution only after the cache is flushed", () => {
    const policy = new ToyPolicy();
    const cands = [
      { text: "x", label: "x" },
      { text: "y", label: "y" },
    ];
    expect(policy.choose("e", cands, 0.4).logprob).toBeCloseTo(Math.log(0.5), 12);
    policy.loadWeights({ "e/x": Math.log(3) }, 1, false);
    expect(policy.choose("e", cands, 0.4).logprob).toBeCloseTo(Math.log(0.5), 12); // stale
    policy.flushCache();
    const choice = policy.choose("e", cands, 0.4);
    expect(choice.chosen).toBe(0);
    expect(choice.logprob).toBeCloseTo(Math.log(0.75), 12);
    expect(choice.version).toBe(1);
  });
});

/** The local loop without the API: env → simulator → GRPO step → weight push, per step. */
async function learningCurve(seed: number, learningRate: number, steps: number) {
  const inference = await openInference({
    serverType: "vllm",
    model: "sim-policy",
    tokenizer: "qwen3",
    simLatencyMs: 0,
    simSeed: seed,
  });
  const dir = mkdtempSync(join(tmpdir(), "toy-policy-"));
  dirs.push(dir);
  try {
    const env = await createEnv(
      getEnvDefinition("gsm8k_lite"),
      { group_size: 8, shuffle_seed: seed },
      inference,
      "qwen3",
    );
    await env.setup();
    const sim = inference.simulator!;
    const trainer = new ToyPolicyTrainer({
      simulatorUrl: sim.url,
      lookup: sim.policy,
      learningRate,
      weightsDir: dir,
    });
    const accuracy: number[] = [];
    for (let step = 1; step <= steps; step++) {
      const groups: ScoredDataGroup[] = [];
      for (let i = 0; i < 4; i++) {
        const [group] = await env.collectTrajectories((await env.getNextItem())!);
        groups.push(group as ScoredDataGroup);
      }
      const scores = groups.flatMap((g) => g.scores);
      accuracy.push(scores.filter((s) => s > 0).length / scores.length);
      const result = trainer.step(groups);
      expect(result.unmatched).toBe(0);
      expect(result.samples).toBe(32);
      await trainer.push(step);
      expect(sim.stats().weightVersion).toBe(step);
    }
    return accuracy;
  } finally {
    await inference.close();
  }
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe("the local loop learns", () => {
  it("gsm8k_lite accuracy rises with GRPO steps and stays flat with learning rate 0", async () => {
    const learned = await learningCurve(3, 1, 18);
    const frozen = await learningCurve(3, 0, 18);
    expect(mean(learned.slice(-5))).toBeGreaterThan(mean(learned.slice(0, 3)) + 0.25);
    expect(mean(learned.slice(-5))).toBeGreaterThan(0.8);
    expect(Math.abs(mean(frozen.slice(-5)) - mean(frozen.slice(0, 3)))).toBeLessThan(0.2);
  }, 60_000);
});
