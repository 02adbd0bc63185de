import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, tooDeep } from "../../../src/core/codecs/json-depth";

const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;

describe("tooDeep", () => {
  it("lets a group of ordinary depth through", () => {
    expect(tooDeep('{"tokens":[[1,2]],"distill_token_ids":[[[1]]],"m":"{[[[["}')).toBe(null);
    expect(tooDeep(`{"group_overrides":${nested(MAX_JSON_DEPTH - 1)}}`)).toBe(null);
  });

  it("names the top-level field holding a value nested too deep", () => {
    const text = `{"tokens":[[1]],"note":"a\\"{","group_overrides":${nested(MAX_JSON_DEPTH)}}`;
    expect(tooDeep(text)?.loc).toEqual(["group_overrides"]);
  });

  it("names the group and field of a list", () => {
    const text = `[{"tokens":[[1]]},{"scores":[1],"overrides":[${nested(200)}]}]`;
    expect(tooDeep(text)?.loc).toEqual([1, "overrides"]);
  });

  it("ignores brackets inside strings", () => {
    expect(tooDeep(`{"a":"${"[".repeat(500)}"}`)).toBe(null);
  });
});

/** Depth of a parsed value: the reference the text scan must agree with. */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== "object") return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce((max: number, child) => Math.max(max, depthOf(child)), 0);
}

describe("tooDeep against the parsed depth", () => {
  it("agrees on 2,000 random documents with brackets, quotes and escapes inside strings", () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const strings = ['"', "\\", "[[{", "}]]", 'a\\"[', "é[", "\\\\", ","];
    const value = (level: number): unknown => {
      const r = random();
      if (level > 12 || r < 0.3)
        return r < 0.15 ? strings[Math.floor(random() * strings.length)] : r * 100;
      const n = Math.floor(random() * 4);
      if (r < 0.65) return Array.from({ length: n }, () => value(level + 1));
      return Object.fromEntries(
        Array.from({ length: n }, (_, i) => [`${strings[i]}k${i}`, value(level + 1)]),
      );
    };
    for (let i = 0; i < 2000; i++) {
      const doc = random() < 0.5 ? { a: value(0) } : [value(0), { b: value(0) }];
      const text = JSON.stringify(doc);
      const limit = 1 + Math.floor(random() * 8);
      expect(tooDeep(text, limit) === null, text).toBe(depthOf(doc) <= limit);
    }
  });
});
