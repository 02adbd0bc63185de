import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { getEnvDefinition } from "../../../src/envs/index";
import {
  SORT_ALPHABET,
  type SortLettersEnv,
  scoreSortAnswer,
  sortItem,
  sortSplits,
} from "../../../src/envs/sort-letters";
import { getTokenizer } from "../../../src/inference/tokenizers/index";
import { CharTokenizer, FakeInference } from "./fakes";

const tokenizer = new CharTokenizer();

/** Answers `sort XYZ` prompts with the letters sorted when `right(letters)`, else unsorted. */
class SortingInference extends FakeInference {
  constructor(private readonly right: (letters: string) => boolean) {
    super(tokenizer);
  }
  override async chatCompletion(params: Parameters<FakeInference["chatCompletion"]>[0]) {
    const content = String(params.messages.at(-1)?.content ?? "");
    const letters = content.replace(/^sort /, "");
    const reply = this.right(letters) ? sortItem(letters).answer : letters;
    return {
      id: "sorting",
      model: "sorting",
      choices: [
        {
          index: 0,
          message: { role: "assistant" as const, content: ` ${reply} ` },
          finish_reason: "stop",
        },
      ],
    };
  }
}

describe("sort_letters", () => {
  it("splits every string into one of a fixed held-out set and the training set", () => {
    const { eval: held, train } = sortSplits({
      length: 3,
      alphabet: SORT_ALPHABET,
      eval_size: 200,
    });
    expect(held).toHaveLength(200);
    expect(train).toHaveLength(23 ** 3 - 200);
    expect(new Set([...held, ...train]).size).toBe(23 ** 3);
    // the same split whatever the env's seed (it is part of the task, not of the run)
    const env = getEnvDefinition("sort_letters").create(
      { seed: 7 },
      new FakeInference(tokenizer),
      tokenizer,
    ) as SortLettersEnv;
    expect(env.evalSplit).toEqual(held);
    expect(() => sortSplits({ length: 2, alphabet: "AB", eval_size: 4 })).toThrow(/eval_size 4/);
  });

  it("keeps every letter one token of the tiny tokenizer, in prompts and answers", async () => {
    // E, L and O are left out: the 400-token tokenizer merges ER, EN, HE, LL and " O".
    const tiny = await getTokenizer(join(import.meta.dirname, "../../fixtures/tokenizers/tiny"));
    const merged: string[] = [];
    for (const a of SORT_ALPHABET)
      for (const b of SORT_ALPHABET)
        for (const text of [`sort ${a}${b}`, `\n${a}${b}`])
          if (
            tiny.encode(text, { addSpecialTokens: false }).length !==
            tiny.encode(text.slice(0, -2), { addSpecialTokens: false }).length + 2
          )
            merged.push(text);
    expect(merged).toEqual([]);
  });

  it("draws training items only and scores exact sorted answers", async () => {
    const env = getEnvDefinition("sort_letters").create(
      {},
      new FakeInference(tokenizer),
      tokenizer,
    ) as SortLettersEnv;
    const held = new Set(env.evalSplit);
    for (let i = 0; i < 50; i++) {
      const item = await env.getNextItem();
      expect(held.has(item.letters)).toBe(false);
      expect(item.answer).toBe([...item.letters].sort().join(""));
    }
    expect(scoreSortAnswer(" ABK\n", "ABK")).toBe(1);
    expect(scoreSortAnswer("AB K", "ABK")).toBe(0);
    expect(scoreSortAnswer("KBA", "ABK")).toBe(0);
    const state = JSON.parse(JSON.stringify(env.saveCheckpoint()));
    const restored = getEnvDefinition("sort_letters").create(
      {},
      new FakeInference(tokenizer),
      tokenizer,
    ) as SortLettersEnv;
    restored.loadCheckpoint(state);
    expect(await restored.getNextItem()).toEqual(await env.getNextItem());
  });

  it("evaluates greedily on the held-out strings", async () => {
    const right = (letters: string) => letters.startsWith("A");
    const env = getEnvDefinition("sort_letters").create(
      { eval_size: 200 },
      new SortingInference(right),
      tokenizer,
    ) as SortLettersEnv;
    const result = await env.evaluateWithSamples();
    expect(result.samples).toHaveLength(200);
    // an already-sorted string is right either way
    const expected = env.evalSplit.filter((s) => right(s) || sortItem(s).answer === s).length / 200;
    expect(Object.values(result.metrics)[0]).toBeCloseTo(expected, 10);
  });
});
