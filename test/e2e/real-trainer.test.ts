/**
 * examples/python/grpo_real_trainer.py through the whole loop (`runStart`: API + sort_letters +
 * the llama.cpp engine + the trainer as --trainer-command), on a tiny model made here (random init
 * from a config, the 400-token test tokenizer, a few supervised steps so groups have mixed
 * rewards): weights change, reach the engine (its logprobs for a fixed sequence become PyTorch's
 * for the trainer's final weights), the loss's ratio is against the batch's logprobs (the engine's
 * for the trainer's own weights: ~0 log-ratio on the first batch), every batch acked once.
 * The engine venv (torch, transformers, gguf) is made by engine-fixture's enginePython (cached).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runStart } from "../../src/cli/start";
import { CONVERTER } from "../../src/engine/convert";
import { closeLlamaRuntime, type EngineServer, startEngine } from "../../src/engine/index";
import { sortItem, sortPrompt, sortSplits } from "../../src/envs/sort-letters";
import { getTokenizer } from "../../src/inference/tokenizers/index";
import { enginePython, score, stopScorer, TINY_TOKENIZER } from "./engine-fixture";
import { freePort, ROOT } from "./harness";

const run = promisify(execFile);
const TRAINER = join(ROOT, "examples", "python", "grpo_real_trainer.py");
// Two letters of two: "AA", "AB", "BB" (3 answers); a briefly warm-started model gets some right.
// Groups whose 4 answers score alike are kept: a policy this small and this trained often answers
// every item alike, and dropping those groups starved the trainer (285 of 291 dropped in one run).
const ENV = {
  length: 2,
  alphabet: "AB",
  eval_size: 1,
  group_size: 4,
  ensure_scores_are_not_same: false,
};
const STEPS = 4;

interface StepRecord {
  step: number;
  batch_id: string;
  staleness_max: number;
  max_abs_log_ratio: number;
  mean_ratio: number;
  weight_version: number;
  push_seconds: number | null;
  tokens: number;
}

async function completionLogprobs(
  engine: EngineServer,
  prompt: number[],
): Promise<{ tokens: number[]; logprobs: number[] }> {
  const res = await fetch(`${engine.url}/v1/completions`, {
    method: "POST",
    body: JSON.stringify({
      prompt,
      max_tokens: 3,
      temperature: 1,
      seed: 7,
      logprobs: 0,
      return_token_ids: true,
    }),
  });
  const body = (await res.json()) as {
    choices: { token_ids: number[]; logprobs: { token_logprobs: number[] } }[];
  };
  const choice = body.choices[0]!;
  return { tokens: choice.token_ids, logprobs: choice.logprobs.token_logprobs };
}

describe("grpo_real_trainer.py: a real model through the loop", () => {
  let python: string;
  let dir: string;
  let engine: EngineServer;
  beforeAll(async () => {
    python = await enginePython();
    dir = mkdtempSync(join(tmpdir(), "real-trainer-"));
    const model = join(dir, "model");
    await run(python, [
      TRAINER,
      "make",
      "--tokenizer",
      TINY_TOKENIZER,
      "--out",
      model,
      "--hidden",
      "32",
    ]);
    const tokenizer = await getTokenizer(TINY_TOKENIZER);
    const { train } = sortSplits(ENV);
    const data = join(dir, "train.jsonl");
    writeFileSync(
      data,
      train
        .map((s) =>
          JSON.stringify({
            prompt: tokenizer.applyChatTemplate([{ role: "user", content: sortPrompt(s) }], {
              addGenerationPrompt: true,
            }),
            completion: `${sortItem(s).answer}<|im_end|>`,
          }),
        )
        .join("\n"),
    );
    await run(python, [
      TRAINER,
      "warmstart",
      "--model",
      model,
      "--data",
      data,
      "--steps",
      "30",
      "--batch",
      "8",
      "--lr",
      "1e-2",
    ]);
    await run(python, [CONVERTER, model, join(dir, "start.gguf")]);
    engine = await startEngine({
      model: join(dir, "start.gguf"),
      parallel: 4,
      threads: 1,
      ctx: 128,
    });
  }, 600_000);
  afterAll(async () => {
    await engine?.close();
    await closeLlamaRuntime();
    stopScorer();
  });

  it("trains, pushes weights the engine then serves, ratios against the batch's logprobs, acks each batch once", async () => {
    const tokenizer = await getTokenizer(TINY_TOKENIZER);
    const prompt = tokenizer.encode(
      tokenizer.applyChatTemplate([{ role: "user", content: sortPrompt("BA") }], {
        addGenerationPrompt: true,
      }),
    );
    const before = await completionLogprobs(engine, prompt);

    const metrics = join(dir, "trainer.jsonl");
    const final = join(dir, "final");
    const command = [
      python,
      TRAINER,
      "train",
      "--model",
      join(dir, "model"),
      "--engine",
      engine.url,
      "--steps",
      String(STEPS),
      "--push-every",
      "2",
      "--batch-size",
      "8",
      "--lr",
      "1e-2",
      "--metrics-out",
      metrics,
      "--save",
      final,
      "--wait",
      "60",
    ]
      .map((a) => JSON.stringify(a))
      .join(" ");
    let batches: { step: number; status: string; batch_id: string }[] = [];
    const quiet = Object.assign(Object.create(process.stdout), {
      write: () => true,
    }) as NodeJS.WriteStream;
    const code = await runStart(
      {
        steps: STEPS,
        port: await freePort(),
        envs: "sort_letters",
        envConfigs: [ENV],
        batchSize: 8,
        maxTokenLen: 128,
        leaseSeconds: 60,
        maxSeconds: 150,
        serverType: "vllm",
        inferenceUrl: `${engine.url}/v1`,
        model: "tiny",
        tokenizer: TINY_TOKENIZER,
        simLatencyMs: 0,
        simSeed: 0,
        trainerCommand: command,
        onFinished: async (finished) => {
          const listed = (await (
            await fetch(`${finished.apiUrl}/v1/runs/${finished.run}/batches`)
          ).json()) as {
            batches: typeof batches;
          };
          batches = listed.batches;
          return [];
        },
      },
      quiet,
    );
    expect(code).toBe(0);
    const steps = readFileSync(metrics, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as StepRecord);
    expect(steps.map((s) => s.step)).toEqual([1, 2, 3, 4]);

    // Every batch acked, once: the trainer's batches are exactly the API's acked ones (the env keeps
    // submitting after the trainer stops, so later batches may wait, never leased).
    const ids = steps.map((s) => s.batch_id);
    expect(new Set(ids).size).toBe(STEPS);
    expect(
      batches
        .filter((b) => b.status === "acked")
        .map((b) => b.batch_id)
        .sort(),
    ).toEqual([...ids].sort());

    // The first batch was sampled by the engine from the trainer's own starting weights: the
    // batch's logprobs are those weights' (llama.cpp vs PyTorch: ~1e-4), so the ratio is ~1,
    // not 1 by construction (it would be exactly 1 if the trainer used its own logprobs).
    const first = steps[0]!;
    expect(first.tokens).toBeGreaterThan(0);
    expect(first.max_abs_log_ratio).toBeGreaterThan(0);
    expect(first.max_abs_log_ratio).toBeLessThan(0.02);
    // Batches sampled before the trainer's latest steps reached the engine are stale, and their
    // ratios show it (the batch's logprobs are the older weights').
    expect(
      steps.some((s) => s.staleness_max >= 1 && s.max_abs_log_ratio > 10 * first.max_abs_log_ratio),
    ).toBe(true);
    // Pushes at steps 2 and 4 announce them as the policy version; batches that waited are stale.
    expect(steps.map((s) => s.weight_version)).toEqual([0, 2, 2, 4]);
    expect(steps.filter((s) => s.push_seconds !== null)).toHaveLength(2);

    // The weights reached the engine: its logprobs for the same tokens are now PyTorch's for the
    // trainer's final weights, and not what they were.
    const after = await completionLogprobs(engine, prompt);
    const sequence = [...prompt, ...after.tokens];
    const pytorch = async (hfDir: string, tokens: number[]) =>
      ((await score({ hfDir, gguf: "" }, [tokens]))[0] ?? []).slice(prompt.length - 1);
    const trained = await pytorch(final, sequence);
    const started = await pytorch(join(dir, "model"), sequence);
    const startedBefore = await pytorch(join(dir, "model"), [...prompt, ...before.tokens]);
    let moved = 0;
    for (const [i, lp] of after.logprobs.entries()) {
      expect(Math.abs(lp - (trained[i] as number))).toBeLessThan(2e-3);
      moved = Math.max(moved, Math.abs(lp - (started[i] as number)));
    }
    for (const [i, lp] of before.logprobs.entries())
      expect(Math.abs(lp - (startedBefore[i] as number))).toBeLessThan(2e-3);
    expect(moved).toBeGreaterThan(0.01);
  });
});
