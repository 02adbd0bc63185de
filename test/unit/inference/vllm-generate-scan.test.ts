import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  parseAtroposGenerateResponse as parseVllmGenerateResponse,
  parseAtroposGenerateText as parseVllmGenerateText,
} from "../../../src/inference/backends/atropos";
import { parseJsonText } from "../../../src/inference/backends/http";
import { scanVllmGenerateBody } from "../../../src/inference/backends/vllm-generate-scan";

const fixture = JSON.parse(
  readFileSync(new URL("../../fixtures/inference/atropos-generate.json", import.meta.url), "utf8"),
) as { response: unknown };

const URL_ = "http://vllm/generate";

/** What the backend did before the scanner: JSON.parse, then walk the parsed body. */
function viaJsonParse(text: string) {
  try {
    return { ok: parseVllmGenerateResponse(parseJsonText(text, URL_), [7]) };
  } catch (error) {
    return { error: String(error) };
  }
}

function viaText(text: string) {
  try {
    return { ok: parseVllmGenerateText(text, [7], URL_) };
  } catch (error) {
    return { error: String(error) };
  }
}

function rng(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

describe("vLLM /generate text scanner", () => {
  it("reads the recorded answer, compact or pretty-printed, like JSON.parse", () => {
    for (const text of [
      JSON.stringify(fixture.response),
      JSON.stringify(fixture.response, null, 2),
    ]) {
      expect(scanVllmGenerateBody(text)).not.toBeNull();
      expect(viaText(text)).toEqual(viaJsonParse(text));
    }
    expect(viaText(JSON.stringify(fixture.response)).ok?.outputTokens).toEqual([
      [19, 151645],
      [785, 4226, 374],
    ]);
  });

  it("keeps JSON.parse's numbers bit for bit (-0, exponents, long mantissas, overflow)", () => {
    const values = ["-0", "0", "-1.5e-3", "2E+2", "0.1000000000000000055511151231257827", "-1e999"];
    const text = `{"logprobs":[[${values.map((v, i) => `[{"${i + 1}":${v}}]`).join(",")}]]}`;
    const scanned = scanVllmGenerateBody(text)!;
    expect(scanned).not.toBeNull();
    const expected = values.map((v) => JSON.parse(v) as number);
    expect(scanned.outputLogprobs[0]!.map((value, i) => Object.is(value, expected[i]))).toEqual(
      values.map(() => true),
    );
  });

  it("hands unusual shapes to JSON.parse: same results and same errors", () => {
    const cases = [
      '{"logprobs":[[[{"1":-0.5,"2":-0.25}]]]}', // two entries: JSON.parse orders integer keys
      '{"logprobs":[[[{"00012":-0.5}]]]}',
      '{"logprobs":[[[{"1234567890123456":-0.5}]]]}',
      '{"logprobs":[[[{"-1":-0.5}]]]}',
      '{"logprobs":[[[{"1.5":-0.5}]]]}',
      '{"logprobs":[[[{"\\u0031":-0.5}]]]}',
      '{"logprobs":[[[{"1":"x"}]]]}',
      '{"logprobs":[[[{}]]]}',
      '{"logprobs":[[[]]]}',
      '{"logprobs":[[[{"1":-0.5}, {"2":-1}]]]}',
      '{"logprobs":[[{"1":-0.5}]],"finish_reasons":[{"type":"abort"}]}',
      '{"logprobs":[[[{"1":-0.5}]]],"finish_reasons":"stop"}',
      '{"logprob\\u0073":[[[{"3":-0.5}]]]}',
      '{"logprobs":[[[{"1":-0.5}]]],"logprobs":[[[{"2":-0.5}]]]}',
      '{"logprobs":null}',
      "{}",
      "[]",
      '{"logprobs":[[[{"1":-0.5}]]],}',
      '{"logprobs":[[[{"1":-0.5}]]]',
      '{"logprobs":[[[{"1":01}]]]}',
      '{"logprobs":[[[{"1":-0.5}]]],"text":["bad\\x"]}',
      '{"logprobs":[[[{"1":-0.5}]]],"text":["tab\tinside"]}',
      '\uFEFF{"logprobs":[[[{"1":-0.5}]]]}',
    ];
    for (const text of cases) expect(viaText(text), text).toEqual(viaJsonParse(text));
    expect(viaText("{").error).toMatch(/returned invalid JSON/);
  });

  it("matches JSON.parse on randomly damaged answers and never accepts invalid JSON", () => {
    const random = rng(3);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
    const ws = () => pick(["", "", " ", "\n  ", "\t", "\r\n"]);
    const numbers = ["-0.5", "0", "-0", "1e5", "-1.25E-3", "3", "-12.000001"];
    for (let n = 0; n < 5000; n++) {
      const choices = Array.from({ length: Math.floor(random() * 3) }, () => {
        const positions = Array.from({ length: Math.floor(random() * 4) }, () => {
          const entry = `{${ws()}"${pick(["19", "151645", "7", "x", "1.5"])}"${ws()}:${ws()}${pick(numbers)}${ws()}}`;
          return random() < 0.8 ? `[${ws()}${entry}${ws()}]` : entry;
        });
        return `[${positions.join(`${ws()},${ws()}`)}]`;
      });
      let text = `{${ws()}"text":["a\\n\\"b\\u00e9 🙂"],"logprobs":[${choices.join(",")}],"finish_reasons":["stop",{"type":"length"}],"token_ids":[[1,true,null]]${ws()}}`;
      for (let k = Math.floor(random() * 3); k > 0; k--) {
        const at = Math.floor(random() * (text.length + 1));
        const r = random();
        if (r < 0.4) text = text.slice(0, at) + text.slice(at + 1);
        else if (r < 0.8)
          text =
            text.slice(0, at) +
            pick([",", "]", "{", '"', "\\", "0", "e", "\u0001"]) +
            text.slice(at);
        else text = text.slice(0, at);
      }
      expect(viaText(text), text).toEqual(viaJsonParse(text));
      if (scanVllmGenerateBody(text)) expect(() => JSON.parse(text), text).not.toThrow();
    }
  });
});
