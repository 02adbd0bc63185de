import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runEvaluate } from "../../../src/cli/evaluate-command";
import { BaseEnv, BaseEnvConfigSchema, defineEnv } from "../../../src/sdk/env";

/** The in-process simulator with a fixed seed. */
const SIMULATED = {
  serverType: "vllm",
  model: "sim-policy",
  tokenizer: "qwen3",
  simLatencyMs: 0,
  simSeed: 3,
};

describe("evaluate (in-process simulator)", () => {
  it("writes metrics.json in Atropos' layout and samples.jsonl, and prints a table", async () => {
    const out = mkdtempSync(join(tmpdir(), "cli-evaluate-"));
    const logs: string[] = [];
    const code = await runEvaluate({ env: "gsm8k_lite", out, ...SIMULATED }, (line) =>
      logs.push(line),
    );
    expect(code).toBe(0);
    const metrics = JSON.parse(readFileSync(join(out, "metrics.json"), "utf8"));
    expect(metrics.config_general.model_name).toBe("sim-policy");
    expect(typeof metrics.config_general.total_evaluation_time_seconds).toBe("number");
    const taskKey = Object.keys(metrics.results).find((k) => k.startsWith("atropos|"));
    expect(taskKey).toMatch(/^atropos\|.+\|0$/);
    expect(metrics.results.all).toEqual(metrics.results[taskKey!]);
    const values = Object.values(metrics.results.all) as number[];
    expect(values.length).toBeGreaterThan(0);
    for (const v of values) expect(Number.isFinite(v)).toBe(true);
    expect(existsSync(join(out, "samples.jsonl"))).toBe(true);
    const samples = readFileSync(join(out, "samples.jsonl"), "utf8").trim().split("\n");
    expect(samples.length).toBeGreaterThan(0);
    expect(logs.join("\n")).toMatch(/metric\s+value/);
  });

  it("refuses an env that defines no evaluation instead of writing empty metrics", async () => {
    const out = mkdtempSync(join(tmpdir(), "eval-none-"));
    class NoEval extends BaseEnv {
      static override envName = "no_eval";
      override async getNextItem() {
        return null;
      }
    }
    const env = defineEnv(NoEval, BaseEnvConfigSchema, "an env without evaluate()");
    await expect(runEvaluate({ env, out, ...SIMULATED })).rejects.toThrow(
      /^env 'no_eval' defines no evaluation .*; envs with one: gsm8k_lite, letter_counting, tool_use, llm_judge, blackjack, code_exec, agent_tasks, sort_letters$/,
    );
    expect(existsSync(join(out, "metrics.json"))).toBe(false);
  });
});

describe("evaluate with k samples per item", () => {
  for (const env of ["gsm8k_lite", "letter_counting", "tool_use"]) {
    it(`${env}: avg@k and unbiased pass@j from eval_samples_per_item samples of each item`, async () => {
      const out = mkdtempSync(join(tmpdir(), `eval-k-${env}-`));
      const code = await runEvaluate(
        { env, out, envConfig: { eval_samples_per_item: 4, eval_size: 6 }, ...SIMULATED },
        () => {},
      );
      expect(code).toBe(0);
      const m = JSON.parse(readFileSync(join(out, "metrics.json"), "utf8")).results.all as Record<
        string,
        number
      >;
      for (const key of ["eval/avg@4", "eval/pass@1", "eval/pass@2", "eval/pass@4"]) {
        expect(m[key], key).toBeGreaterThanOrEqual(0);
        expect(m[key], key).toBeLessThanOrEqual(1);
      }
      // pass@1 is the mean correctness; more tries can only help.
      expect(m["eval/pass@1"]).toBeCloseTo(m["eval/avg@4"]!, 10);
      expect(m["eval/pass@2"]).toBeGreaterThanOrEqual(m["eval/pass@1"]!);
      expect(m["eval/pass@4"]).toBeGreaterThanOrEqual(m["eval/pass@2"]!);
      const samples = readFileSync(join(out, "samples.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { item_index: number; sample: number; correct: boolean });
      // 6 items (gsm8k_lite holds out at most half its bundled set) × 4 samples.
      expect(samples.length % 4).toBe(0);
      expect(new Set(samples.map((s) => s.sample))).toEqual(new Set([0, 1, 2, 3]));
      const items = new Map<number, number>();
      for (const s of samples)
        items.set(s.item_index, (items.get(s.item_index) ?? 0) + (s.correct ? 1 : 0));
      const passAt4 = [...items.values()].filter((c) => c > 0).length / items.size;
      expect(m["eval/pass@4"]).toBeCloseTo(passAt4, 10);
    });
  }
});
