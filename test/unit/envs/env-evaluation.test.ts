/**
 * Every built-in env can be evaluated (so `atropos-edge evaluate`, steps_per_eval and the
 * regression guard work for all of them): code_exec, llm_judge, blackjack and agent_tasks on the
 * inference simulator over HTTP, with hidden tests really run in the local sandbox.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEnv, type InferenceHandle, openInference } from "../../../src/cli/inference";
import { parseTasksFile } from "../../../src/cli/tasks-file";
import { envRegistry, getEnvDefinition } from "../../../src/envs/index";
import { createLocalSandbox } from "../../../src/sandbox/node/local-sandbox";
import { setSandboxProvider } from "../../../src/sandbox/registry";

const ROOT = join(import.meta.dirname, "../../..");

describe("evaluate() for every built-in env", () => {
  let inference: InferenceHandle;
  const sandbox = createLocalSandbox({ python: { size: 1, maxConcurrent: 2 } });

  beforeAll(async () => {
    setSandboxProvider(() => sandbox);
    inference = await openInference({
      serverType: "vllm",
      model: "sim-policy",
      tokenizer: "qwen3",
      simLatencyMs: 0,
      simSeed: 0,
    });
  });
  afterAll(async () => {
    setSandboxProvider(null);
    await Promise.all([inference?.close(), sandbox.close?.()]);
  });

  const evaluate = async (name: string, config: Record<string, unknown>) => {
    const env = await createEnv(getEnvDefinition(name), config, inference, "qwen3");
    await env.setup();
    return { env, result: await env.evaluateWithSamples() };
  };

  it("every built-in env defines an evaluation", () => {
    const without = Object.values(envRegistry)
      .filter((d) => !d.hasEvaluation)
      .map((d) => d.name);
    expect(without).toEqual([]);
  });

  it("code_exec: answers run against the hidden tests; correct = every test passed", async () => {
    const { result } = await evaluate("code_exec", { eval_size: 3, eval_samples_per_item: 2 });
    expect(result.samples).toHaveLength(6);
    for (const s of result.samples) {
      expect(s.correct).toBe((s.passed as number) === (s.total as number));
      expect(s.total).toBeGreaterThan(0);
    }
    const right = result.samples.filter((s) => s.correct).length;
    expect(result.metrics["eval/avg@2"]).toBeCloseTo(right / 6);
    expect(Object.keys(result.metrics).sort()).toEqual([
      "eval/avg@2",
      "eval/pass@1",
      "eval/pass@2",
      "eval/test_pass_rate",
    ]);
    const passRate =
      result.samples.reduce((a, s) => a + (s.passed as number) / (s.total as number), 0) / 6;
    expect(result.metrics["eval/test_pass_rate"]).toBeCloseTo(passRate);
  }, 120_000);

  it("blackjack: held-out hands; correct = a win; the training deck is untouched", async () => {
    const { env, result } = await evaluate("blackjack", { eval_size: 5 });
    const fresh = await createEnv(getEnvDefinition("blackjack"), {}, inference, "qwen3");
    expect(await env.getNextItem()).toEqual(await fresh.getNextItem());
    expect(result.samples).toHaveLength(5);
    for (const s of result.samples) expect(s.correct).toBe(s.outcome === "win");
    const rewards = result.samples.map((s) => s.reward as number);
    expect(result.metrics["eval/mean_reward"]).toBeCloseTo(
      rewards.reduce((a, b) => a + b, 0) / rewards.length,
    );
    // Evaluation hands are not training observations.
    expect(env.takeObservations()).toEqual({});
  }, 60_000);

  it("llm_judge: answers judged as in training; correct = score ≥ eval_pass_score", async () => {
    const { result } = await evaluate("llm_judge", { eval_size: 3, eval_pass_score: 0.5 });
    expect(result.samples.map((s) => s.question)).toEqual([
      "Why is the sky blue?",
      "How does a vaccine train the immune system?",
      "What causes the seasons on Earth?",
    ]);
    for (const s of result.samples) {
      expect((s.judge_scores as number[]).length).toBeGreaterThanOrEqual(2);
      expect(s.correct).toBe((s.score as number) >= 0.5);
    }
    expect(result.metrics["eval/unjudged"]).toBe(0);
    expect(result.metrics["eval/mean_score"]).toBeCloseTo(
      result.samples.reduce((a, s) => a + (s.score as number), 0) / 3,
    );
  }, 60_000);

  it("agent_tasks: every task, k episodes each, scored by reference, hidden tests or judges", async () => {
    const tasks = parseTasksFile(
      readFileSync(join(ROOT, "examples/agent-tasks/tasks.jsonl"), "utf8"),
      "tasks.jsonl",
    );
    const url = inference.simulator!.url;
    const judges = ["judge-a", "judge-b"].map((n) => ({
      name: n,
      base_url: `${url}/v1`,
      model_name: n,
    }));
    const { result } = await evaluate("agent_tasks", {
      tasks,
      judges,
      eval_samples_per_item: 2,
      eval_pass_score: 0.5,
    });
    expect(result.samples).toHaveLength(tasks.length * 2);
    expect(new Set(result.samples.map((s) => s.task_id))).toEqual(new Set(tasks.map((t) => t.id)));
    for (const s of result.samples) {
      const task = tasks.find((t) => t.id === s.task_id)!;
      if (task.evaluation.kind === "judge") expect(s.correct).toBe((s.score as number) >= 0.5);
      else expect(s.correct).toBe(s.score === 1);
    }
    // The known fizzbuzz solution passes its hidden tests in the sandbox.
    const fizz = result.samples.filter((s) => s.task_id === "fizzbuzz");
    for (const s of fizz) expect(s.correct).toBe(String(s.final_response).includes("def fizzbuzz"));
    expect(result.metrics["eval/unscored"]).toBe(0);
    expect(Object.keys(result.metrics)).toEqual(
      expect.arrayContaining(["eval/avg@2", "eval/pass@1", "eval/pass@2", "eval/mean_score"]),
    );
  }, 120_000);
});
