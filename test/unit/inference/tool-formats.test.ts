/**
 * Each bundled family's real chat template (rendered with @huggingface/jinja, as at run time)
 * renders an assistant message with tool calls; parsing the rendered completion with the
 * family's format recovers the same calls. Malformed calls become errors, never throws.
 */
import { describe, expect, it } from "vitest";
import { TOOL_FORMATS, toolFormatForFamily } from "../../../src/core/tool-calls/index";
import type { ChatMessage, ToolCall, ToolDefinition } from "../../../src/core/wire/group-types";
import { getTokenizer } from "../../../src/inference/tokenizers/index";
import { TOKENIZER_FAMILIES } from "../../../src/inference/tokenizers/registry";
import { toolFormatFor } from "../../../src/inference/tool-calls";

const TOOLS: ToolDefinition[] = ["calculator", "kv_set"].map((name) => ({
  type: "function",
  function: {
    name,
    description: `the ${name} tool`,
    parameters: { type: "object", properties: { expression: { type: "string" } } },
  },
}));

const PROMPT: ChatMessage[] = [
  { role: "system", content: "You solve tasks with tools." },
  { role: "user", content: "What is 17 * 23? Store it as 'total'." },
];

function calls(family: string, n: number): ToolCall[] {
  const format = toolFormatForFamily(family);
  const all: ToolCall[] = [
    {
      id: format.newId(),
      type: "function",
      function: { name: "calculator", arguments: JSON.stringify({ expression: "17 * 23" }) },
    },
    {
      id: format.newId(),
      type: "function",
      function: {
        name: "kv_set",
        arguments: JSON.stringify({
          key: "total",
          value: "391",
          note: 'é "quoted"',
          n: [1, 2.5],
          ok: true,
        }),
      },
    },
  ];
  return all.slice(0, n);
}

/** The completion an assistant message renders to: the full chat minus the generation prompt. */
async function renderedCompletion(family: string, toolCalls: ToolCall[]): Promise<string> {
  const tokenizer = await getTokenizer(family);
  const prompt = tokenizer.applyChatTemplate(PROMPT, { tools: TOOLS, addGenerationPrompt: true });
  const full = tokenizer.applyChatTemplate(
    [...PROMPT, { role: "assistant", content: null, tool_calls: toolCalls }],
    { tools: TOOLS },
  );
  expect(full.startsWith(prompt), `${family}: the generation prompt prefixes the reply`).toBe(true);
  return full.slice(prompt.length);
}

const HAS_IDS = new Set(["mistral"]);

describe("tool calls round-trip through each family's real chat template", () => {
  it("picks the format from the tokenizer family (and model names of the family)", () => {
    expect(toolFormatFor("qwen3").name).toBe("hermes");
    expect(toolFormatFor("llama3_2").name).toBe("llama3_json");
    expect(toolFormatFor("meta-llama/Llama-3.2-1B-Instruct").name).toBe("llama3_json");
    expect(toolFormatFor("mistral_nemo").name).toBe("mistral");
    expect(toolFormatFor("deepseek_v3").name).toBe("deepseek_v3");
    expect(toolFormatFor("gemma3").name).toBe("pythonic");
    expect(toolFormatFor("llama3").name).toBe("pythonic");
    expect(toolFormatFor("/some/dir/unknown").name).toBe("hermes");
    expect(toolFormatFor("mistral_nemo", "hermes").name).toBe("hermes");
    expect(toolFormatFor("mistral_nemo", "auto").name).toBe("mistral");
    expect(() => toolFormatFor("qwen3", "xml" as never)).toThrow(/unknown tool-call format 'xml'/);
  });

  for (const family of TOKENIZER_FAMILIES) {
    const format = toolFormatForFamily(family);
    for (const n of format.parallel ? [1, 2] : [1]) {
      it(`${family} (${format.name}): ${n} call${n > 1 ? "s" : ""}`, async () => {
        const sent = calls(family, n);
        const completion = await renderedCompletion(family, sent);
        const parsed = format.parse(completion);
        expect(parsed.errors).toEqual([]);
        expect(parsed.calls.map((c) => c.function.name)).toEqual(sent.map((c) => c.function.name));
        expect(parsed.calls.map((c) => JSON.parse(c.function.arguments))).toEqual(
          sent.map((c) => JSON.parse(c.function.arguments)),
        );
        if (HAS_IDS.has(format.name))
          expect(parsed.calls.map((c) => c.id)).toEqual(sent.map((c) => c.id));
        // What the model writes (render) parses back the same way.
        const again = format.parse(format.render(sent));
        expect(again.calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual(
          sent.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
        );
      });
    }
  }

  it("Llama 3.2's template refuses parallel calls; a second call in a reply is an error the model sees", async () => {
    await expect(renderedCompletion("llama3_2", calls("llama3_2", 2))).rejects.toThrow(
      /only supports single tool-calls/,
    );
    const format = TOOL_FORMATS.llama3_json;
    const parsed = format.parse(
      '{"name": "calculator", "parameters": {"expression": "1 + 2"}}; {"name": "kv_set", "parameters": {"key": "a", "value": "3"}}',
    );
    expect(parsed.calls.map((c) => c.function.name)).toEqual(["calculator"]);
    expect(parsed.errors).toEqual([
      expect.stringMatching(
        /one tool call per message: .*refuses parallel calls, so kv_set was not run/,
      ),
    ]);
  });

  it("Mistral ids are 9 alphanumerics (its template throws on others); written ids are kept", async () => {
    const id = TOOL_FORMATS.mistral.newId();
    expect(id).toMatch(/^[A-Za-z0-9]{9}$/);
    const bad: ToolCall = { ...calls("mistral_nemo", 1)[0]!, id: "call_0123456789abcdef01234567" };
    await expect(renderedCompletion("mistral_nemo", [bad])).rejects.toThrow(/length 9/);
    const parsed = TOOL_FORMATS.mistral.parse('[TOOL_CALLS][{"name": "f", "arguments": {}}]');
    expect(parsed.calls[0]!.id).toMatch(/^[A-Za-z0-9]{9}$/);
  });
});

describe("malformed calls are errors, never throws", () => {
  const cases: Record<string, string[]> = {
    hermes: [
      '<tool_call>\n{"name": "calculator", "arguments": {"expression": "1 +}\n</tool_call>',
      '<tool_call>\n{"name": "calculator", "argu',
      '<tool_call>\n{"arguments": {}}\n</tool_call>',
    ],
    llama3_json: [
      '{"name": "calculator", "parameters": {"expression": "1 + 2"',
      '{"name": "calculator", "parameters": [1]}',
    ],
    mistral: [
      '[TOOL_CALLS][{"name": "calculator", "arguments": {"expression": "1',
      "[TOOL_CALLS] nothing",
    ],
    deepseek_v3: [
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>calculator\n```json\n{bad}\n```<｜tool▁call▁end｜>",
      '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>calculator\n```json\n{"expression": "1',
    ],
    pythonic: [
      '[calculator(expression="1 + 2"',
      "[calculator(expression=1 +)]",
      "[calculator(x=open('f'))]",
    ],
  };
  for (const [name, texts] of Object.entries(cases)) {
    it(name, () => {
      const format = TOOL_FORMATS[name as keyof typeof TOOL_FORMATS];
      for (const text of texts) {
        const parsed = format.parse(`Let me compute.\n${text}`);
        expect(parsed.calls, text).toEqual([]);
        expect(parsed.errors, text).toHaveLength(1);
        expect(parsed.content).toBe("Let me compute.");
      }
    });
  }

  it("text without calls is plain content in every format", () => {
    for (const format of Object.values(TOOL_FORMATS)) {
      expect(format.parse("The result is 391.\n<answer>391</answer>")).toEqual({
        content: "The result is 391.\n<answer>391</answer>",
        calls: [],
        errors: [],
      });
    }
  });
});
