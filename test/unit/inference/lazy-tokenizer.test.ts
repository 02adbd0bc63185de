/** LazyTokenizer: loads once on demand, a failed load is tried again, unloaded use says so. */
import { describe, expect, it } from "vitest";
import {
  isTokenizerNotLoaded,
  LazyTokenizer,
  loadTokenizer,
} from "../../../src/inference/tokenizers/lazy";
import type { Tokenizer } from "../../../src/inference/types";

const fake: Tokenizer = {
  name: "fake",
  eosTokenId: 2,
  bosTokenId: null,
  stopTokenIds: [2, 3],
  encode: (text) => [...text].map((c) => c.charCodeAt(0)),
  decode: (ids) => String.fromCharCode(...ids),
  applyChatTemplate: (messages) => messages.map((m) => String(m.content)).join("|"),
};

describe("LazyTokenizer", () => {
  it("refuses synchronous use until loaded, then delegates", async () => {
    let loads = 0;
    const lazy = new LazyTokenizer("fake", async () => {
      loads++;
      return fake;
    });
    expect(lazy.isLoaded).toBe(false);
    let thrown: unknown;
    try {
      lazy.encode("a");
    } catch (error) {
      thrown = error;
    }
    expect(isTokenizerNotLoaded(thrown)).toBe(true);
    expect(String(thrown)).toContain("tokenizer fake is not loaded yet");
    expect(loads).toBe(0);

    const [a, b] = await Promise.all([lazy.load(), loadTokenizer(lazy)]);
    expect(a).toBe(fake);
    expect(b).toBe(fake);
    expect(loads).toBe(1);
    expect(lazy.encode("hi")).toEqual([104, 105]);
    expect(lazy.decode([104, 105])).toBe("hi");
    expect(lazy.stopTokenIds).toEqual([2, 3]);
    expect(lazy.applyChatTemplate([{ role: "user", content: "x" }])).toBe("x");
  });

  it("tries a failed load again on the next call", async () => {
    let attempts = 0;
    const lazy = new LazyTokenizer("flaky", async () => {
      attempts++;
      if (attempts === 1) throw new Error("R2 object tokenizers/x/tokenizer.json not found");
      return fake;
    });
    await expect(lazy.load()).rejects.toThrow("not found");
    expect(await lazy.load()).toBe(fake);
    expect(attempts).toBe(2);
  });

  it("passes an already loaded tokenizer through", async () => {
    expect(await loadTokenizer(fake)).toBe(fake);
  });
});
