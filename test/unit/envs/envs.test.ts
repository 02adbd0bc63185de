import { describe, expect, it } from "vitest";
import type { ScoredDataGroup } from "../../../src/core/wire/group-types";
import { trajectorySchema } from "../../../src/core/wire/trajectory";
import { processEnv } from "../../../src/env-sdk/runtime/process";
import { validateGroupForSend } from "../../../src/env-sdk/send-validation";
import type { BlackjackEnv } from "../../../src/envs/blackjack";
import { generateGsm8kLite, toJsonl } from "../../../src/envs/data/gsm8k-lite-generator";
import { GSM8K_LITE_JSONL } from "../../../src/envs/data/gsm8k-lite-jsonl";
import { BlackjackGame, handTotal, shuffledDeck } from "../../../src/envs/games/blackjack-game";
import { type Gsm8kLiteEnv, parseGsm8kJsonl } from "../../../src/envs/gsm8k-lite";
import { envRegistry, getEnvDefinition } from "../../../src/envs/index";
import { type LetterCountingEnv, scoreLetterAnswer } from "../../../src/envs/letter-counting";
import { parseJudgeScore, trimmedMean } from "../../../src/envs/llm-judge";
import type { ToolUseEnv } from "../../../src/envs/tool-use";
import { calculate } from "../../../src/envs/tools/calculator";
import { standardTools, type Tool, Toolbox } from "../../../src/envs/tools/toolbox";
import { CharTokenizer, FakeInference } from "./fakes";

const tokenizer = new CharTokenizer();

function create(
  name: string,
  config: Record<string, unknown> = {},
  inference = new FakeInference(tokenizer),
) {
  return getEnvDefinition(name).create(config, inference, tokenizer);
}

/** Every sequence's prompt positions are -100/1.0 and trainable positions carry token ids. */
function expectExactSequences(group: ScoredDataGroup) {
  expect(group.inference_logprobs).toBeTruthy();
  group.tokens.forEach((tokens, i) => {
    const masks = group.masks[i]!;
    const lps = group.inference_logprobs![i]!;
    expect(masks.length).toBe(tokens.length);
    expect(lps.length).toBe(tokens.length);
    masks.forEach((m, p) => {
      if (m === -100) expect(lps[p]).toBe(1.0);
      else {
        expect(m).toBe(tokens[p]);
        expect(lps[p]).toBeLessThan(0);
      }
    });
    expect(masks.some((m) => m !== -100)).toBe(true);
  });
}

describe("registry", () => {
  it("lists the example envs with parsed defaults", () => {
    expect(Object.keys(envRegistry).sort()).toEqual([
      "agent_tasks",
      "blackjack",
      "code_exec",
      "gsm8k_lite",
      "letter_counting",
      "llm_judge",
      "sort_letters",
      "tool_use",
    ]);
    expect(envRegistry.gsm8k_lite!.defaultConfig.group_size).toBe(4);
    expect(() => getEnvDefinition("nope")).toThrow(/available: /);
    expect(() => create("gsm8k_lite", { group_sise: 3 })).toThrow(/group_sise/);
  });
});

describe("gsm8k_lite", () => {
  it("ships 200 generated problems identical to the generator output", () => {
    const problems = generateGsm8kLite();
    expect(problems).toHaveLength(200);
    expect(GSM8K_LITE_JSONL).toBe(toJsonl(problems));
    const items = parseGsm8kJsonl(GSM8K_LITE_JSONL);
    expect(new Set(items.map((i) => i.question)).size).toBe(200);
    for (const item of items) expect(item.gold).toMatch(/^-?\d+$/);
  });

  it("scores ±1 with exact tokens and resumes its iterator from a checkpoint", async () => {
    const env = create(
      "gsm8k_lite",
      { group_size: 8 },
      new FakeInference(tokenizer, { correctProbability: 0.5 }),
    );
    await env.setup();
    const first = await env.getNextItem();
    const [group] = await env.collectTrajectories(first!);
    const g = group as ScoredDataGroup;
    expect(g.tokens).toHaveLength(8);
    expect(new Set(g.scores.map((s) => Math.sign(s)))).toEqual(new Set([1, -1]));
    expectExactSequences(g);

    const state = env.saveCheckpoint();
    const next = await env.getNextItem();
    const resumed = create("gsm8k_lite", { group_size: 8 });
    await resumed.setup();
    resumed.loadCheckpoint(JSON.parse(JSON.stringify(state)));
    expect(await resumed.getNextItem()).toEqual(next);
  });

  it("accepts dataset text (e.g. from R2) and evaluates on the held-out split", async () => {
    const env = create(
      "gsm8k_lite",
      { eval_size: 2 },
      new FakeInference(tokenizer, { correctProbability: 1 }),
    ) as Gsm8kLiteEnv;
    env.useDatasetText(
      [
        { question: "Math one?", answer: "#### 3" },
        { question: "Math two?", answer: "#### 5" },
        { question: "What is 2 plus 2?", answer: "two and two #### 4" },
        { question: "What is 10 plus 1?", answer: "#### 11" },
      ]
        .map((r) => JSON.stringify(r))
        .join("\n"),
    );
    await env.setup();
    expect((await env.getNextItem())!.question).toMatch(/Math/);
    const result = await env.evaluateWithSamples();
    expect(result.samples).toHaveLength(2);
    expect(result.metrics["eval/percent_correct"]).toBe(1);
  });
});

describe("max_eval_workers", () => {
  it("bounds gsm8k_lite's concurrent eval requests and keeps samples in order", async () => {
    let inFlight = 0;
    let peak = 0;
    class SlowInference extends FakeInference {
      override async chatCompletion(params: Parameters<FakeInference["chatCompletion"]>[0]) {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((r) => setTimeout(r, 5));
        inFlight--;
        return super.chatCompletion(params);
      }
    }
    const env = create(
      "gsm8k_lite",
      { eval_size: 7, max_eval_workers: 2 },
      new SlowInference(tokenizer, { correctProbability: 1 }),
    );
    await env.setup();
    const result = await env.evaluateWithSamples();
    expect(peak).toBe(2);
    expect(result.samples).toHaveLength(7);
    const unbounded = create("gsm8k_lite", { eval_size: 7 });
    await unbounded.setup();
    const expected = (await unbounded.evaluateWithSamples()).samples.map((s) => s.id);
    expect(result.samples.map((s) => s.id)).toEqual(expected);
  });
});

describe("letter_counting", () => {
  it("scores answers in tags and advances the curriculum through checkpointed feedback", async () => {
    expect(scoreLetterAnswer("<answer>3</answer>", 3)).toBe(1);
    expect(scoreLetterAnswer("<answer>3</answer> <answer>4</answer>", 3)).toBe(0);
    const feeder = create("letter_counting", {
      curriculum_window: 2,
      advance_threshold: 0.75,
    }) as LetterCountingEnv;
    const worker = create(
      "letter_counting",
      { group_size: 4 },
      new FakeInference(tokenizer, { correctProbability: 1 }),
    );
    const item = await feeder.getNextItem();
    expect(item.level).toBe(1);
    const [group] = await worker.collectTrajectories(item);
    expectExactSequences(group as ScoredDataGroup);
    expect((group as ScoredDataGroup).scores).toEqual([1, 1, 1, 1]);
    // feedback arrives at the feeder (another instance): two good groups → level 2
    feeder.recordScores(item, (group as ScoredDataGroup).scores);
    expect(feeder.level).toBe(1);
    feeder.recordScores(item, [1, 1, 0.5, 1]);
    expect(feeder.level).toBe(2);
    const state = JSON.parse(JSON.stringify(feeder.saveCheckpoint()));
    const restored = create("letter_counting", { curriculum_window: 2 }) as LetterCountingEnv;
    restored.loadCheckpoint(state);
    expect(restored.level).toBe(2);
    expect(await restored.getNextItem()).toEqual(await feeder.getNextItem());
    // stale feedback from an item of an older level does not count
    feeder.recordScores(item, [1, 1, 1, 1]);
    expect(feeder.saveCheckpoint().window).toEqual([]);
  });
});

describe("tool_use", () => {
  it("calculator parses arithmetic safely and rejects code", () => {
    expect(calculate("(17 * 23) + 5")).toBe(396);
    expect(calculate("2 ^ 3 ^ 2")).toBe(512);
    expect(calculate("-3 + sqrt(16) * max(1, 2)")).toBe(5);
    expect(calculate("7 % 4 + 1.5")).toBe(4.5);
    expect(() => calculate("process.exit()")).toThrow();
    expect(() => calculate("1 / 0")).toThrow(/division/);
    expect(() => calculate("(".repeat(100))).toThrow();
    expect(() => calculate("2 +")).toThrow();
  });

  it("toolbox enforces the whitelist and per-call timeouts", async () => {
    const store = new Map<string, string>();
    const base = standardTools(store);
    const tools: Record<string, Tool> = {
      ...base,
      slow: {
        definition: base.calculator!.definition,
        timeoutMs: 20,
        run: () => new Promise<string>(() => {}),
      },
    };
    const box = new Toolbox(tools);
    expect((await box.call("kv_set", { key: "a", value: "1" })).result).toBe("ok");
    expect((await box.call("kv_get", { key: "a" })).result).toBe("1");
    expect((await box.call("kv_get", { key: "b" })).error).toMatch(/no value/);
    expect((await box.call("eval", {})).error).toMatch(/not allowed/);
    expect((await box.call("constructor", {})).error).toMatch(/not allowed/);
    expect((await box.call("slow", {})).error).toMatch(/timed out/);
  });

  it("runs multi-turn episodes with recorded steps, process rewards and per-token advantages", async () => {
    const env = create(
      "tool_use",
      { group_size: 4 },
      new FakeInference(tokenizer, { correctProbability: 1 }),
    ) as ToolUseEnv;
    const task = await env.getNextItem();
    const episode = await env.runEpisode(task);
    expect(episode.steps.map((s) => s.tool_call.name)).toEqual(["calculator", "kv_set"]);
    expect(episode.steps[0]!.tool_call.result).toBe(task.answer);
    expect(episode.steps[0]!.tool_call.error).toBeNull();
    expect(episode.steps[0]!.observation).toBe(`calculator result: ${task.answer}`);
    expect(episode.finalAnswer).toBe(task.answer);
    expect(episode.score).toBe(1.5);
    expect(episode.turnRewards).toEqual([0.5, 0.5, 1.5]);
    // three assistant turns → three trainable spans in one sequence
    const spans = episode.rollout.masks.filter(
      (m, i, a) => m !== -100 && (i === 0 || a[i - 1] === -100),
    ).length;
    expect(spans).toBe(3);

    const mixed = create(
      "tool_use",
      { group_size: 6 },
      new FakeInference(tokenizer, { correctProbability: 0.5, seed: 2 }),
    );
    const [group] = await mixed.collectTrajectories(await mixed.getNextItem());
    const g = group as ScoredDataGroup;
    expectExactSequences(g);
    expect(g.advantages).toHaveLength(6);
    g.advantages!.forEach((adv, i) => {
      expect(adv.length).toBe(g.tokens[i]!.length);
      g.masks[i]!.forEach((m, p) => {
        if (m === -100) expect(adv[p]).toBe(0);
      });
    });
    expect(new Set(g.scores).size).toBeGreaterThan(1);

    // One trajectory per sequence, beside the group: the episode's steps as data.
    expect(g.trajectories).toHaveLength(6);
    g.trajectories!.forEach((trajectory, i) => {
      expect(trajectorySchema.parse(trajectory)).toEqual(trajectory);
      expect(trajectory).toMatchObject({ sequence: i, source: "env", judge_score: null });
      expect(trajectory.token_count).toBe(g.tokens[i]!.length);
      expect(trajectory.task).toContain("Tool task:");
      expect(trajectory.success).toBe(g.scores[i]! >= 1);
    });
    const solved = g.trajectories!.find((t) => t.success)!;
    expect(solved.steps[0]!.tool_call?.name).toBe("calculator");
    expect(solved.final_response).toContain("<answer>");
  });
});

describe("llm_judge", () => {
  it("parses scores and trims min and max", () => {
    expect(parseJudgeScore("fine.\nScore: 7")).toBe(7);
    expect(parseJudgeScore("Score: 3 ... Score: 8.5")).toBe(8.5);
    expect(parseJudgeScore("Score: 11")).toBeNull();
    expect(parseJudgeScore("no idea")).toBeNull();
    expect(trimmedMean([1, 5, 6, 10])).toBe(5.5);
    expect(trimmedMean([4, 8])).toBe(6);
  });

  it("scores answers with several judges and drops the group when too few answer", async () => {
    const env = create(
      "llm_judge",
      { group_size: 4, num_judges: 3 },
      new FakeInference(tokenizer, { correctProbability: 0.5 }),
    );
    const [group] = await env.collectTrajectories(await env.getNextItem());
    const g = group as ScoredDataGroup;
    expectExactSequences(g);
    for (const s of g.scores) expect(s).toBeGreaterThanOrEqual(0);
    for (const s of g.scores) expect(s).toBeLessThanOrEqual(1);
    expect(new Set(g.scores).size).toBeGreaterThan(1);

    // one judge seed failing is tolerated (2 of 3 ≥ min 2)
    const flaky = new FakeInference(tokenizer, { failWhen: (_p, params) => params.seed === 0 });
    const tolerant = create("llm_judge", { group_size: 2 }, flaky);
    const [ok] = await tolerant.collectTrajectories(await tolerant.getNextItem());
    expect((ok as ScoredDataGroup).scores).toHaveLength(2);

    const broken = new FakeInference(tokenizer, { failWhen: (_p, params) => params.seed !== 2 });
    const strict = create("llm_judge", { group_size: 2 }, broken);
    await expect(strict.collectTrajectories(await strict.getNextItem())).rejects.toThrow(
      /only 1 of 3 judges/,
    );
  });
});

describe("blackjack", () => {
  it("deals a seeded deck and scores outcomes", () => {
    expect(shuffledDeck(5)).toEqual(shuffledDeck(5));
    expect(shuffledDeck(5)).toHaveLength(52);
    expect(handTotal(["A", "K"])).toBe(21);
    expect(handTotal(["A", "A", "9"])).toBe(21);
    expect(handTotal(["K", "Q", "5"])).toBe(25);
    const game = new BlackjackGame(["10", "9", "6", "8", "10", "2", "3"]);
    game.hit(); // 10 + 6 + 10 = 26 → bust
    expect(game.done).toBe(true);
    expect(game.reward()).toBe(-1);
  });

  it("plays multi-turn episodes whose earlier turns stay trainable", async () => {
    const env = create(
      "blackjack",
      { group_size: 8 },
      new FakeInference(tokenizer, { correctProbability: 0.5 }),
    ) as BlackjackEnv;
    const item = await env.getNextItem();
    const [group] = await env.collectTrajectories(item);
    const g = group as ScoredDataGroup;
    expectExactSequences(g);
    for (const s of g.scores) expect([-1, 0, 1]).toContain(s);
    const episode = await env.playEpisode(item, 3);
    const spans = episode.rollout.masks.filter(
      (m, i, a) => m !== -100 && (i === 0 || a[i - 1] === -100),
    ).length;
    expect(spans).toBe(episode.actions.length);
    // find an item where some episode takes ≥2 turns, to prove multi-turn tracking
    let multi = 0;
    for (let i = 0; i < 20 && multi < 2; i++)
      multi = Math.max(multi, (await env.playEpisode(await env.getNextItem(), i)).actions.length);
    expect(multi).toBeGreaterThanOrEqual(2);
  });

  it("redeals a natural 21 from the same deck so the player always acts", () => {
    const deck = ["A", "9", "K", "8", "10", "5", "7", "6", "4"] as const;
    const game = new BlackjackGame([...deck]);
    expect(game.done).toBe(false);
    expect(game.player).toEqual(["10", "7"]);
    expect(game.dealer).toEqual(["5", "6"]);
    expect(game.hit()).toBe("4");
    expect(() => new BlackjackGame(["A", "2", "K", "3"])).toThrow(/deck exhausted/);
  });

  it("turns every seed into a valid group, including seeds that deal a natural 21", async () => {
    const groupSize = 4;
    const env = create(
      "blackjack",
      { group_size: groupSize },
      new FakeInference(tokenizer, { correctProbability: 0.5 }),
    ) as BlackjackEnv;
    const seeds = Array.from({ length: 200 }, (_, i) => i);
    const naturals = seeds.filter((seed) => {
      const deck = shuffledDeck(seed);
      return handTotal([deck[0]!, deck[2]!]) === 21;
    });
    expect(naturals.length).toBeGreaterThan(0);
    const natural = await env.playEpisode({ seed: naturals[0]! });
    expect(natural.actions.length).toBeGreaterThanOrEqual(1);
    for (const seed of seeds) {
      const [group] = await env.collectTrajectories({ seed });
      const g = group as ScoredDataGroup;
      expect(g.tokens).toHaveLength(groupSize);
      expectExactSequences(g);
      expect(
        validateGroupForSend(g, {
          groupSize,
          ensureScoresAreNotSame: false,
          maxTokenLen: -1,
          includeMessages: false,
        }).ok,
      ).toBe(true);
    }
  });
});

describe("processEnv", () => {
  it("produces the requested number of validated JSONL-ready groups", async () => {
    const env = create(
      "letter_counting",
      { group_size: 4 },
      new FakeInference(tokenizer, { correctProbability: 0.5 }),
    );
    const groups: ScoredDataGroup[] = [];
    const progress = await processEnv(env, {
      groups: 5,
      onGroup: (g) => void groups.push(g),
      concurrency: 2,
    });
    expect(progress.produced).toBe(5);
    expect(groups).toHaveLength(5);
    for (const g of groups) {
      expect(g.messages).toHaveLength(4);
      expect(
        validateGroupForSend(g, {
          groupSize: 4,
          ensureScoresAreNotSame: false,
          maxTokenLen: -1,
          includeMessages: false,
        }).ok,
      ).toBe(true);
    }
  });

  it("counts drops with reasons and stays bounded", async () => {
    const broken = new FakeInference(tokenizer, { failWhen: () => true });
    const env = create("llm_judge", { group_size: 2 }, broken);
    const progress = await processEnv(env, { groups: 3, onGroup: () => {}, maxItems: 4 });
    expect(progress.produced).toBe(0);
    expect(progress.itemsUsed).toBe(4);
    expect(Object.keys(progress.dropReasons).join()).toMatch(/judges/);
  });
});
