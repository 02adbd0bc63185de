import { describe, expect, it } from "vitest";
import { getTokenizer, resolveTokenizerFamily } from "../../../src/inference/tokenizers/index";

const TOOL = {
  type: "function" as const,
  function: { name: "calc", description: "calculator", parameters: { type: "object" } },
};

describe("tokenizer registry", () => {
  it("maps short and HF names to packaged families", () => {
    expect(resolveTokenizerFamily("qwen3")).toBe("qwen3");
    expect(resolveTokenizerFamily("Qwen/Qwen3-0.6B")).toBe("qwen3");
    expect(resolveTokenizerFamily("Qwen/Qwen3-8B")).toBe("qwen3");
    expect(resolveTokenizerFamily("meta-llama/Meta-Llama-3-8B-Instruct")).toBe("llama3");
    expect(resolveTokenizerFamily("NousResearch/DeepHermes-3-Llama-3-3B-Preview")).toBe("llama3");
    expect(resolveTokenizerFamily("meta-llama/Llama-3.2-3B-Instruct")).toBe("llama3_2");
    expect(resolveTokenizerFamily("google/gemma-3-27b-it")).toBe("gemma3");
    expect(resolveTokenizerFamily("Qwen/Qwen2.5-7B-Instruct")).toBe("qwen2_5");
    expect(resolveTokenizerFamily("mistral-nemo")).toBe("mistral_nemo");
    expect(resolveTokenizerFamily("deepseek-ai/DeepSeek-V3")).toBe("deepseek_v3");
    // Llama 3.1/3.3 have their own template: they load from a directory (or the hub).
    expect(resolveTokenizerFamily("meta-llama/Llama-3.1-8B-Instruct")).toBeNull();
    expect(resolveTokenizerFamily("gpt2")).toBeNull();
  });

  it("rejects unknown names with the list of available ones", async () => {
    await expect(getTokenizer("gpt2")).rejects.toThrow(
      /No tokenizer "gpt2": not a bundled family.*qwen3.*llama3/,
    );
  });

  it("caches one instance per family", async () => {
    const a = await getTokenizer("qwen3");
    const b = await getTokenizer("Qwen/Qwen3-8B");
    expect(a).toBe(b);
  });
});

describe("qwen3 tokenizer", () => {
  it("round-trips text, unicode and special tokens exactly", async () => {
    const tok = await getTokenizer("qwen3");
    for (const text of [
      "Hello, world!",
      "  spaces  and\ttabs\n",
      "数学 ∑ é 🙂",
      "a<|im_end|>b <think>x</think>",
    ]) {
      expect(tok.decode(tok.encode(text))).toBe(text);
    }
    expect(tok.encode("<|im_start|>user")).toEqual([151644, 872]);
    expect(tok.eosTokenId).toBe(151645);
    expect(tok.bosTokenId).toBeNull();
    expect(tok.decode([9707, 151645], { skipSpecialTokens: true })).toBe("Hello");
    expect(tok.decode([])).toBe("");
  });

  it("renders the chat template with generation prompt, thinking switch and tools", async () => {
    const tok = await getTokenizer("qwen3");
    const messages = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "What is 2+2?" },
    ];
    expect(tok.applyChatTemplate(messages, { addGenerationPrompt: true })).toBe(
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    );
    expect(
      tok.applyChatTemplate(messages, { addGenerationPrompt: true, enableThinking: false }),
    ).toMatch(/<\|im_start\|>assistant\n<think>\n\n<\/think>\n\n$/);
    expect(tok.applyChatTemplate(messages)).not.toMatch(/assistant\n$/);
    const withTools = tok.applyChatTemplate(messages, { addGenerationPrompt: true, tools: [TOOL] });
    expect(withTools).toContain("# Tools");
    expect(withTools).toContain('"name": "calc"');
    // Earlier think blocks are stripped by the template (why ManagedServer hides them).
    const multi = tok.applyChatTemplate(
      [
        ...messages,
        { role: "assistant", content: "<think>\nadd\n</think>\n\n4" },
        { role: "user", content: "3+3?" },
      ],
      { addGenerationPrompt: true },
    );
    expect(multi).toContain("<|im_start|>assistant\n4<|im_end|>");
  });
});

describe("llama3 tokenizer", () => {
  it("round-trips text and adds exactly one BOS", async () => {
    const tok = await getTokenizer("llama3");
    const text = "Hello, world! 数学 🙂\n\n  x";
    const ids = tok.encode(text);
    expect(ids[0]).toBe(128000);
    expect(tok.decode(ids.slice(1))).toBe(text);
    expect(tok.encode(text, { addSpecialTokens: false })[0]).not.toBe(128000);
    expect(tok.encode("<|begin_of_text|>hi").filter((id) => id === 128000)).toHaveLength(1);
    expect(tok.eosTokenId).toBe(128009);
    expect(tok.stopTokenIds).toEqual([128009, 128001]);
  });

  it("renders the Llama 3 Instruct format; generation prompt only on request", async () => {
    const tok = await getTokenizer("meta-llama/Meta-Llama-3-8B-Instruct");
    const messages = [{ role: "user", content: "Hi" }];
    const header = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
    expect(tok.applyChatTemplate(messages)).toBe(header);
    expect(tok.applyChatTemplate(messages, { addGenerationPrompt: true })).toBe(
      `${header}<|start_header_id|>assistant<|end_header_id|>\n\n`,
    );
    const withTools = tok.applyChatTemplate(messages, { addGenerationPrompt: true, tools: [TOOL] });
    // Llama 3.0's template ignores tools: the pythonic format's prompt goes in a system message.
    expect(withTools).toContain(
      "<|start_header_id|>system<|end_header_id|>\n\nYou may call functions to help with the task.",
    );
    expect(withTools).toContain('{"type": "function", "function": {"name": "calc"');
    expect(withTools).toContain('[get_weather(city="Paris"), add(a=1, b=2)]');
    const hermes = tok.applyChatTemplate(messages, {
      addGenerationPrompt: true,
      tools: [TOOL],
      toolFormat: "hermes",
    });
    expect(hermes).toContain('<tools>\n{"type": "function", "function": {"name": "calc"');
  });
});

describe("decode shortcuts used by ManagedServer", () => {
  it("decodes a completion plus its stop token as the two decoded separately, and lists special ids", async () => {
    for (const family of ["qwen3", "llama3"]) {
      const tokenizer = await getTokenizer(family);
      const stop = tokenizer.stopTokenIds[0]!;
      expect(tokenizer.specialTokenIds.has(stop)).toBe(true);
      for (const text of [
        "The answer is \\boxed{42}.",
        "<think>Let me count: ü, 東京, 🙂</think> done",
        " leading space and trailing\n",
      ]) {
        const body = tokenizer.encode(text, { addSpecialTokens: false });
        expect(tokenizer.decode([...body, stop])).toBe(
          tokenizer.decode(body) + tokenizer.decode([stop]),
        );
        if (!body.some((id) => tokenizer.specialTokenIds.has(id))) {
          expect(tokenizer.decode(body, { skipSpecialTokens: true })).toBe(tokenizer.decode(body));
        }
      }
    }
  });
});
