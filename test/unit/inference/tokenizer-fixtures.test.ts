import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../src/core/group-types";
import type { ToolDefinition } from "../../../src/env-workers/inference/types";
import { getTokenizer, TOKENIZER_FAMILIES } from "../../../src/env-workers/tokenizers/index";

/** Golden ids and rendered templates from the Rust `tokenizers` + `transformers` (scripts/tokenizer-fixtures.py). */
interface Fixture {
  family: string;
  texts: { text: string; ids: number[]; decoded: string }[];
  /** `encode(text)` with special tokens (the post-processor's BOS policy). */
  with_special_tokens: { text: string; ids: number[] }[];
  chats: {
    messages: ChatMessage[];
    tools?: ToolDefinition[];
    kwargs: { add_generation_prompt: boolean; enable_thinking?: boolean; date_string?: string };
    text: string;
    ids: number[];
  }[];
}

function fixture(family: string): Fixture {
  const url = new URL(`../../fixtures/tokenizers/${family}.json`, import.meta.url);
  return JSON.parse(readFileSync(url, "utf8")) as Fixture;
}

describe.each(TOKENIZER_FAMILIES)("%s matches the reference implementation", (family) => {
  const golden = fixture(family);

  it("has at least 200 texts and the chat cases", () => {
    expect(golden.texts.length).toBeGreaterThanOrEqual(200);
    expect(golden.chats.length).toBeGreaterThanOrEqual(5);
  });

  it("encodes every text to identical ids and decodes them back identically", async () => {
    const tokenizer = await getTokenizer(family);
    const mismatches: string[] = [];
    for (const { text, ids, decoded } of golden.texts) {
      const got = tokenizer.encode(text, { addSpecialTokens: false });
      if (JSON.stringify(got) !== JSON.stringify(ids))
        mismatches.push(`encode ${JSON.stringify(text)}`);
      if (tokenizer.decode(ids) !== decoded) mismatches.push(`decode ${JSON.stringify(text)}`);
    }
    expect(mismatches).toEqual([]);
  });

  it("adds special tokens like the reference", async () => {
    const tokenizer = await getTokenizer(family);
    for (const { text, ids } of golden.with_special_tokens) {
      // The packaged Llama 3 file lacks the BOS post-processor of the real checkpoints, whose
      // tokenizer starts every encode with <|begin_of_text|>; we follow the checkpoints.
      const expected = family === "llama3" ? [128000, ...ids] : ids;
      expect(tokenizer.encode(text)).toEqual(expected);
    }
  });

  it("renders every chat case to identical text and ids", async () => {
    const tokenizer = await getTokenizer(family);
    for (const chat of golden.chats) {
      const { add_generation_prompt, enable_thinking, ...variables } = chat.kwargs;
      const text = tokenizer.applyChatTemplate(chat.messages, {
        addGenerationPrompt: add_generation_prompt,
        tools: chat.tools,
        enableThinking: enable_thinking,
        variables,
      });
      expect(text).toBe(chat.text);
      expect(tokenizer.encode(text, { addSpecialTokens: false })).toEqual(chat.ids);
    }
  });
});
