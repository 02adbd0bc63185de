import { Tokenizer as HfCore } from "@huggingface/tokenizers";
import { describe, expect, it } from "vitest";
import { ByteLevelDecodeTable } from "../../../src/inference/tokenizers/byte-level-decode";
import { byteLevelSource } from "../../../src/inference/tokenizers/hf-tokenizer";
import { getTokenizer, type TokenizerFamily } from "../../../src/inference/tokenizers/index";
import { readBundled } from "../../../src/inference/tokenizers/node-files";

interface Library {
  core: HfCore;
  source: ReturnType<typeof byteLevelSource>;
  vocabSize: number;
  specialIds: number[];
}

const loaded = new Map<TokenizerFamily, Library>();

/** The library tokenizer itself, as HfTokenizer wraps it (loaded once per family). */
function library(family: TokenizerFamily): Library {
  let lib = loaded.get(family);
  if (!lib) {
    const files = readBundled(family);
    const source = byteLevelSource(files.tokenizerJson);
    lib = {
      core: new HfCore(files.tokenizerJson, files.tokenizerConfig),
      source,
      vocabSize: source.model.vocab.length,
      specialIds: (files.tokenizerJson.added_tokens ?? [])
        .filter((t) => t.special)
        .map((t) => t.id),
    };
    loaded.set(family, lib);
  }
  return lib;
}

const reference = (lib: Library, ids: number[], skip: boolean) =>
  lib.core.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false });

/** Deterministic LCG so failures reproduce. */
function rng(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

const BYTE_LEVEL: TokenizerFamily[] = [
  "qwen3",
  "llama3",
  "qwen2_5",
  "llama3_2",
  "deepseek_v3",
  "mistral_nemo",
];

describe.each(BYTE_LEVEL)("byte-level decode table (%s)", (family) => {
  it("decodes exactly like the library: every id alone, with and without skipping specials", async () => {
    const inner = library(family);
    const table = ByteLevelDecodeTable.from(inner.source);
    expect(table).not.toBeNull();
    const mismatches: number[] = [];
    for (let id = 0; id < inner.vocabSize; id++) {
      for (const skip of [false, true]) {
        if (table!.decode([id], skip) !== reference(inner, [id], skip)) mismatches.push(id);
      }
    }
    expect(mismatches).toEqual([]);
  });

  it("matches on random sequences: added tokens between byte runs, split and invalid UTF-8", async () => {
    const inner = library(family);
    const table = ByteLevelDecodeTable.from(inner.source)!;
    const vocabSize = inner.vocabSize;
    const special = inner.specialIds;
    const random = rng(BYTE_LEVEL.indexOf(family) + 1);
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
    const inner = library(family);
    const table = ByteLevelDecodeTable.from(inner.source)!;
    const tokenizer = await getTokenizer(family);
    for (const text of ["\uFEFFhello", "数学 ∑ é 🙂\n\t", "<think>x</think> done"]) {
      const ids = tokenizer.encode(text, { addSpecialTokens: false });
      expect(table.decode(ids, false)).toBe(reference(inner, ids, false));
      expect(table.decode(ids, false)).toBe(text);
    }
  });

  it("declines ids it cannot vouch for; HfTokenizer then answers like the library", async () => {
    const inner = library(family);
    const table = ByteLevelDecodeTable.from(inner.source)!;
    const tokenizer = await getTokenizer(family);
    const outOfRange = inner.vocabSize + 5;
    const outcome = (decode: () => string) => {
      try {
        return { text: decode() };
      } catch (error) {
        return { error: String(error) };
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
    const inner = library("qwen3").source;
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
