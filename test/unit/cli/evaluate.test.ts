import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runEvaluate } from "../../../src/cli/evaluate-command";

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
    await expect(runEvaluate({ env: "blackjack", out, ...SIMULATED })).rejects.toThrow(
      "env 'blackjack' defines no evaluation",
    );
    expect(existsSync(join(out, "metrics.json"))).toBe(false);
  });
});
