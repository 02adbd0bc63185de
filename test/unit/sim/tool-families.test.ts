/**
 * tool_use on the simulator in every bundled tokenizer family: the simulator writes its tool
 * calls in the family's own format, the env parses them (≥ 95 % over 20 groups), and the toy
 * policy learns the task on Llama 3.2 and Mistral Nemo as it does on Qwen (the in-process loop of
 * learning-targets.test.ts: env → simulator over HTTP → GRPO step → weight push, `start`'s
 * default learning rate and batch of 4 groups of 8).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ToyPolicyTrainer } from "../../../src/cli/demo-trainer";
import { createEnv, openInference } from "../../../src/cli/inference";
import { DEFAULT_LEARNING_RATE } from "../../../src/cli/start";
import type { ChatMessage, ScoredDataGroup } from "../../../src/core/wire/group-types";
import { getEnvDefinition } from "../../../src/envs/index";
import type { ToolUseEnv } from "../../../src/envs/tool-use";
import { TOKENIZER_FAMILIES } from "../../../src/inference/tokenizers/registry";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function toolUseOn(tokenizer: string, seed: number) {
  const inference = await openInference({
    serverType: "vllm",
    model: "sim-policy",
    tokenizer,
    simLatencyMs: 0,
    simSeed: seed,
  });
  const env = (await createEnv(
    getEnvDefinition("tool_use"),
    { group_size: 8, seed },
    inference,
    tokenizer,
  )) as ToolUseEnv;
  await env.setup();
  return { inference, env };
}

/** Assistant turns where the simulator wrote a tool call, and those parsed as calls. */
function callTurns(messages: ChatMessage[]): { written: number; parsed: number } {
  let written = 0;
  let parsed = 0;
  messages.forEach((message, i) => {
    if (message.role !== "assistant") return;
    const wrote =
      Boolean(message.tool_calls?.length) ||
      /calculator|kv_set/.test(String(message.content ?? ""));
    if (!wrote) return;
    written++;
    const next = messages[i + 1];
    if (next?.role === "tool" && next.name !== "invalid") parsed++;
  });
  return { written, parsed };
}

/** What each family's calls look like in the trained sequence. */
const NATIVE: Record<(typeof TOKENIZER_FAMILIES)[number], string> = {
  qwen2_5: "<tool_call>",
  qwen3: "<tool_call>",
  llama3: "[calculator(expression=",
  llama3_2: '{"name": "calculator", "parameters": {"expression": ',
  gemma3: "[calculator(expression=",
  deepseek_v3: "<｜tool▁call▁begin｜>function<｜tool▁sep｜>calculator\n```json\n",
  mistral_nemo: '[TOOL_CALLS][{"name": "calculator", "arguments": {"expression": ',
};

/** Runs of trainable positions in a mask: one per assistant turn of a single tracked sequence. */
const trainableSpans = (masks: number[]) =>
  masks.filter((m, i, a) => m !== -100 && (i === 0 || a[i - 1] === -100)).length;

describe("tool_use in each family's own tool-call format, on the simulator", () => {
  for (const family of TOKENIZER_FAMILIES) {
    it(`${family}: over 20 groups ≥ 95 % of the simulator's tool calls are parsed as calls`, async () => {
      const { inference, env } = await toolUseOn(family, 1);
      try {
        let written = 0;
        let parsed = 0;
        let solved = 0;
        for (let g = 0; g < 20; g++) {
          const task = await env.getNextItem();
          const episodes = await Promise.all(
            Array.from({ length: 8 }, (_, i) => env.runEpisode(task, i)),
          );
          for (const e of episodes) {
            // Every turn extends one sequence (earlier calls replayed as sampled).
            const turns = e.messages.filter((m) => m.role === "assistant").length;
            expect(trainableSpans(e.rollout.masks)).toBe(turns);
            if (e.steps.length > 0)
              expect(env.tokenizer.decode(e.rollout.tokens)).toContain(NATIVE[family]);
            const counts = callTurns(e.messages);
            written += counts.written;
            parsed += counts.parsed;
            if (e.score === 1.5) solved++;
          }
        }
        expect(written).toBeGreaterThan(100);
        expect(parsed / written).toBeGreaterThanOrEqual(0.95);
        // Whole episodes work: calculator, store, answer.
        expect(solved).toBeGreaterThan(0);
      } finally {
        await inference.close();
      }
    }, 60_000);
  }
});

const GROUPS_PER_BATCH = 4;

/** Per-step accuracy (answers with the right result) over every rollout generated that step. */
async function learningCurve(tokenizer: string, steps: number): Promise<number[]> {
  const { inference, env } = await toolUseOn(tokenizer, 1);
  const dir = mkdtempSync(join(tmpdir(), "tool-families-"));
  dirs.push(dir);
  try {
    const sim = inference.simulator!;
    const trainer = new ToyPolicyTrainer({
      simulatorUrl: sim.url,
      lookup: sim.policy,
      learningRate: DEFAULT_LEARNING_RATE,
      weightsDir: dir,
    });
    const accuracy: number[] = [];
    for (let step = 1; step <= steps; step++) {
      const kept: ScoredDataGroup[] = [];
      let rollouts = 0;
      let correct = 0;
      for (let tries = 0; kept.length < GROUPS_PER_BATCH; tries++) {
        if (tries > 100) throw new Error(`${tokenizer}: step ${step} found no varied group`);
        const [group] = await env.collectTrajectories(await env.getNextItem());
        const scores = (group as ScoredDataGroup).scores;
        rollouts += scores.length;
        correct += scores.filter((s) => s >= 1).length;
        if (scores.some((s) => s !== scores[0])) kept.push(group as ScoredDataGroup);
      }
      accuracy.push(correct / rollouts);
      expect(trainer.step(kept).unmatched).toBe(0);
      await trainer.push(step);
    }
    return accuracy;
  } finally {
    await inference.close();
  }
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe("tool_use learns in each family's format (default learning rate)", () => {
  for (const family of ["qwen3", "llama3_2", "mistral_nemo"]) {
    it(`${family}: accuracy over the last quarter of 24 steps ≥ 0.2 above the first quarter`, async () => {
      const curve = await learningCurve(family, 24);
      const quarter = curve.length / 4;
      expect(mean(curve.slice(-quarter))).toBeGreaterThanOrEqual(
        mean(curve.slice(0, quarter)) + 0.2,
      );
    }, 120_000);
  }
});
