import { describe, expect, it } from "vitest";
import { buildProgram } from "../../../src/cli/main";
import { chooseTokenizer } from "../../../src/cli/tokenizer-choice";
import { modelTokenizerFamily } from "../../../src/inference/tokenizers/model-families";

describe("model name → tokenizer family", () => {
  it("maps known checkpoints, aliases and fine-tunes to their bundled family", () => {
    expect(modelTokenizerFamily("meta-llama/Meta-Llama-3-8B-Instruct")).toBe("llama3");
    expect(modelTokenizerFamily("meta-llama/Llama-3.2-1B-Instruct")).toBe("llama3_2");
    expect(modelTokenizerFamily("Qwen/Qwen3-8B")).toBe("qwen3");
    expect(modelTokenizerFamily("google/gemma-3-4b-it")).toBe("gemma3");
    expect(modelTokenizerFamily("someone/my-qwen2.5-finetune")).toBe("qwen2_5");
    // Llama 3.1 has its own template: not guessed.
    expect(modelTokenizerFamily("meta-llama/Llama-3.1-8B-Instruct")).toBeNull();
    expect(modelTokenizerFamily("acme/secret-model")).toBeNull();
  });
});

describe("chooseTokenizer", () => {
  it("selects a known model's family instead of the simulator's qwen3", () => {
    expect(chooseTokenizer({ model: "meta-llama/Meta-Llama-3-8B-Instruct" })).toBe("llama3");
    expect(chooseTokenizer({ model: "sim-policy" })).toBe("qwen3");
    expect(chooseTokenizer({ model: "sim-policy", tokenizer: "gemma3" })).toBe("gemma3");
  });

  it("refuses an unknown model without --tokenizer, saying what to pass", () => {
    expect(() => chooseTokenizer({ model: "acme/secret-model" })).toThrow(
      /acme\/secret-model.*--tokenizer.*qwen3.*directory.*--tokenizer acme\/secret-model/,
    );
    // With a tokenizer (a directory, an id) the unknown model is fine.
    expect(chooseTokenizer({ model: "acme/secret-model", tokenizer: "./tok" })).toBe("./tok");
  });

  it("refuses a tokenizer of another family unless forced", () => {
    const input = { model: "meta-llama/Meta-Llama-3-8B-Instruct", tokenizer: "qwen3" };
    expect(() => chooseTokenizer(input)).toThrow(/uses the llama3 tokenizer.*--force-tokenizer/);
    expect(chooseTokenizer({ ...input, force: true })).toBe("qwen3");
    expect(chooseTokenizer({ ...input, tokenizer: "llama3" })).toBe("llama3");
    // A model id of the same family is the same tokenizer.
    expect(chooseTokenizer({ ...input, tokenizer: "meta-llama/Meta-Llama-3-70B-Instruct" })).toBe(
      "meta-llama/Meta-Llama-3-70B-Instruct",
    );
  });

  it("is what the CLI applies before it starts anything", async () => {
    const run = (args: string[]) =>
      buildProgram()
        .exitOverride()
        .parseAsync(["node", "atropos-edge", ...args]);
    // The inference URL is never contacted: the refusal comes first.
    await expect(
      run([
        "process",
        "--env",
        "gsm8k_lite",
        "--model",
        "acme/secret-model",
        "--inference-url",
        "http://127.0.0.1:9/v1",
      ]),
    ).rejects.toThrow(/--model acme\/secret-model.*Pass --tokenizer/);
    await expect(
      run([
        "serve",
        "--env",
        "gsm8k_lite",
        "--model",
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "--tokenizer",
        "qwen3",
      ]),
    ).rejects.toThrow(/--force-tokenizer/);
  });
});
