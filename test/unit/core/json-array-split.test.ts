import { describe, expect, it } from "vitest";
import {
  ArraySyntaxError,
  JsonArraySplitter,
  NotAnArray,
} from "../../../src/core/codecs/json-array-split";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Splits `text` fed in chunks of `size` bytes; returns the parsed elements. */
function split(text: string, size: number): unknown[] {
  const bytes = encoder.encode(text);
  const splitter = new JsonArraySplitter();
  const out: unknown[] = [];
  for (let at = 0; at < bytes.length; at += size) {
    splitter.push(bytes.subarray(at, at + size), (e) => out.push(JSON.parse(decoder.decode(e))));
  }
  splitter.end();
  return out;
}

describe("JsonArraySplitter", () => {
  const value = [
    { tokens: [[1, 2], [3]], s: 'a "quoted" ] } , [ { string', e: "\\", u: "é😀" },
    [],
    {},
    "x,y]",
    -1.5e3,
    null,
    [[[{ deep: [1, { a: "]" }] }]]],
  ];
  const text = ` \n[ ${value.map((v) => JSON.stringify(v)).join(" ,\n")} ] \n`;

  it("gives each element whole, whatever the chunk boundaries", () => {
    for (const size of [1, 2, 3, 7, 64, text.length]) expect(split(text, size)).toEqual(value);
    expect(split("[]", 1)).toEqual([]);
  });

  it("counts elements as they complete", () => {
    const splitter = new JsonArraySplitter();
    const seen: number[] = [];
    splitter.push(encoder.encode('[{"a": 1}, {"b": '), () => seen.push(splitter.count));
    expect(seen).toEqual([0]);
    splitter.push(encoder.encode("2}]"), () => seen.push(splitter.count));
    expect(seen).toEqual([0, 1]);
    expect(splitter.count).toBe(2);
  });

  it("refuses what is not an array, and a broken array", () => {
    expect(() => split('{"tokens": []}', 4)).toThrow(NotAnArray);
    expect(() => split("", 4)).toThrow(NotAnArray);
    for (const broken of ["[1,,2]", "[1,]", "[1] 2", "[1, 2", "[{]", "[1}]", "[,1]"]) {
      expect(() => split(broken, 2), broken).toThrow(ArraySyntaxError);
    }
  });
});
