import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, tooDeep } from "../../../src/core/json-depth";

const bytes = (text: string) => new TextEncoder().encode(text);
const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;

describe("tooDeep", () => {
  it("lets a group of ordinary depth through", () => {
    expect(tooDeep(bytes('{"tokens":[[1,2]],"distill_token_ids":[[[1]]],"m":"{[[[["}'))).toBe(null);
    expect(tooDeep(bytes(`{"group_overrides":${nested(MAX_JSON_DEPTH - 1)}}`))).toBe(null);
  });

  it("names the top-level field holding a value nested too deep", () => {
    const text = `{"tokens":[[1]],"note":"a\\"{","group_overrides":${nested(MAX_JSON_DEPTH)}}`;
    expect(tooDeep(bytes(text))?.loc).toEqual(["group_overrides"]);
  });

  it("names the group and field of a list", () => {
    const text = `[{"tokens":[[1]]},{"scores":[1],"overrides":[${nested(200)}]}]`;
    expect(tooDeep(bytes(text))?.loc).toEqual([1, "overrides"]);
  });

  it("ignores brackets inside strings", () => {
    expect(tooDeep(bytes(`{"a":"${"[".repeat(500)}"}`))).toBe(null);
  });
});
