/**
 * The example envs that use the reusable Curriculum: letter_counting (levels of string length)
 * and gsm8k_lite (levels of question length, opt-in), both checkpointed and reported as the
 * `curriculum/level` metric.
 */
import { describe, expect, it } from "vitest";
import type { Gsm8kItem, Gsm8kLiteEnv } from "../../../src/envs/gsm8k-lite";
import { getEnvDefinition } from "../../../src/envs/index";
import type { LetterCountingEnv } from "../../../src/envs/letter-counting";
import { CharTokenizer, FakeInference } from "./fakes";

const tokenizer = new CharTokenizer();
const create = (name: string, config: Record<string, unknown>) =>
  getEnvDefinition(name).create(config, new FakeInference(tokenizer), tokenizer);

async function gsm8k(config: Record<string, unknown>): Promise<Gsm8kLiteEnv> {
  const env = create("gsm8k_lite", config) as Gsm8kLiteEnv;
  await env.setup();
  return env;
}

async function draw(env: Gsm8kLiteEnv, n: number): Promise<Gsm8kItem[]> {
  const items: Gsm8kItem[] = [];
  for (let i = 0; i < n; i++) items.push((await env.getNextItem())!);
  return items;
}

describe("gsm8k_lite curriculum", () => {
  it("is off by default: every problem, no level on the items", async () => {
    const env = await gsm8k({});
    const items = await draw(env, 20);
    expect(items.every((i) => i.level === undefined)).toBe(true);
  });

  it("draws the shortest questions first, advances on good scores, falls back on bad ones", async () => {
    const env = await gsm8k({
      curriculum_levels: 3,
      curriculum_window: 2,
      curriculum_advance_threshold: 0.5,
      curriculum_fallback_threshold: -0.5,
    });
    const first = await draw(env, 30);
    expect(first.every((i) => i.level === 1)).toBe(true);
    const longest1 = Math.max(...first.map((i) => i.question.length));

    for (const item of first.slice(0, 2)) env.recordScores(item, [1, 1, 1, -1]);
    expect(env.curriculum.level).toBe(2);
    const second = await draw(env, 60);
    expect(new Set(second.map((i) => i.level))).toEqual(new Set([1, 2]));
    const level2 = second.filter((i) => i.level === 2);
    expect(Math.min(...level2.map((i) => i.question.length))).toBeGreaterThanOrEqual(longest1);

    // Checkpointed: a fresh instance resumes at level 2.
    const restored = await gsm8k({ curriculum_levels: 3, curriculum_window: 2 });
    restored.loadCheckpoint(env.saveCheckpoint());
    expect(restored.curriculum.level).toBe(2);

    // Scores of level-1 problems do not move level 2; bad level-2 scores fall back.
    env.recordScores(second.find((i) => i.level === 1)!, [-1, -1]);
    expect(env.curriculum.level).toBe(2);
    for (const item of level2.slice(0, 2)) env.recordScores(item, [-1, -1, -1, -1]);
    expect(env.curriculum.level).toBe(1);
    // Reported as a metric.
    expect(env.metrics()["curriculum/level_max"]).toBe(2);
  });
});

describe("letter_counting curriculum", () => {
  it("falls back when configured, and checkpoints its level and window", async () => {
    const env = create("letter_counting", {
      start_level: 3,
      curriculum_window: 2,
      fallback_threshold: 0.3,
    }) as LetterCountingEnv;
    const item = (await env.getNextItem())!;
    expect(item.level).toBe(3);
    env.recordScores(item, [0, 0]);
    expect(env.saveCheckpoint()).toMatchObject({ level: 3, window: [0] });
    env.recordScores(item, [0, 1, 0, 0]);
    expect(env.level).toBe(2);
  });
});
