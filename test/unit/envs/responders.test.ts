import { describe, expect, it } from "vitest";
import { SeededRng } from "../../../src/core/codecs/rng";
import { AccuracyReward } from "../../../src/env-sdk/rewards";
import { BLACKJACK_INTRO, describeState } from "../../../src/envs/blackjack";
import { GSM8K_LITE_JSONL } from "../../../src/envs/data/gsm8k-lite-jsonl";
import { BlackjackGame } from "../../../src/envs/games/blackjack-game";
import { parseGsm8kJsonl } from "../../../src/envs/gsm8k-lite";
import { letterPrompt, scoreLetterAnswer } from "../../../src/envs/letter-counting";
import { judgePrompt, POLICY_QUESTION_PREFIX, parseJudgeScore } from "../../../src/envs/llm-judge";
import { toolTaskPrompt } from "../../../src/envs/tool-use";
import { respond } from "../../../src/sim/responders";
import { basicStrategy } from "../../../src/sim/responders/blackjack";

const ask = (promptText: string, correctProbability: number, seed = 1) => {
  const rng = new SeededRng(seed);
  return respond({ promptText, rng: () => rng.next(), correctProbability });
};

describe("simulator responders", () => {
  it("math: boxed answers, right exactly when asked to be", () => {
    const [item] = parseGsm8kJsonl(GSM8K_LITE_JSONL);
    const prompt = `<|im_start|>user\nMath problem: ${item!.question}<|im_end|>\n<|im_start|>assistant\n`;
    const acc = new AccuracyReward();
    expect(ask(prompt, 1).responder).toBe("gsm8k_lite");
    expect(acc.score(ask(prompt, 1).text, item!.gold)).toBe(true);
    expect(acc.score(ask(prompt, 0).text, item!.gold)).toBe(false);
    expect(ask(prompt, 0.5, 7).text).toBe(ask(prompt, 0.5, 7).text); // deterministic
    const hits = Array.from({ length: 200 }, (_, s) =>
      acc.score(ask(prompt, 0.3, s).text, item!.gold),
    ).filter(Boolean).length;
    expect(hits).toBeGreaterThan(35);
    expect(hits).toBeLessThan(85);
  });

  it("letters: count in <answer> tags", () => {
    const prompt = letterPrompt("banana", "a");
    expect(scoreLetterAnswer(ask(prompt, 1).text, 3)).toBe(1);
    expect(scoreLetterAnswer(ask(prompt, 0).text, 3)).toBe(0);
  });

  it("tool use: calculator, then kv_set, then the answer", () => {
    const task = toolTaskPrompt({ expression: "(2 + 3) * 4", key: "total" });
    expect(ask(task, 1).text).toContain('"name":"calculator"');
    const afterCalc = `${task}\n<tool_response>\ncalculator result: 20\n</tool_response>`;
    expect(ask(afterCalc, 1).text).toContain('"name":"kv_set"');
    expect(
      ask(`${afterCalc}\n<tool_response>\nkv_set result: ok\n</tool_response>`, 1).text,
    ).toContain("<answer>20</answer>");
    expect(ask(afterCalc, 0).text).toContain("<answer>21</answer>");
  });

  it("judge: Score: N in 1..10, higher for answers with key points; policy answers questions", () => {
    const good = judgePrompt("rubric", "Why?", "Key points: a, b.");
    const bad = judgePrompt("rubric", "Why?", "hard to say");
    expect(ask(good, 0.5).responder).toBe("llm_judge_judge");
    expect(parseJudgeScore(ask(good, 0.5).text)!).toBeGreaterThanOrEqual(7);
    expect(parseJudgeScore(ask(bad, 0.5).text)!).toBeLessThanOrEqual(5);
    expect(ask(`${POLICY_QUESTION_PREFIX} Why?`, 1).text).toContain("Key points:");
  });

  it("blackjack: basic strategy on the latest state", () => {
    expect(basicStrategy(12, "2")).toBe("stand");
    expect(basicStrategy(15, "K")).toBe("hit");
    expect(basicStrategy(19, "A")).toBe("stand");
    const game = new BlackjackGame(["10", "9", "9", "8", "2", "3"]);
    const prompt = `${BLACKJACK_INTRO} ${describeState(game)}`; // 19 vs 9 → stand
    expect(ask(prompt, 1).text).toBe("stand");
    expect(ask(prompt, 0).text).toBe("hit");
  });

  it("unrelated prompts still reach the fallback", () => {
    expect(ask("hello there", 0.5).responder).toBe("fallback");
  });
});
