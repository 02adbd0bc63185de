/**
 * MultiTurnEnv, the SDK's tool loop, on a real ManagedServer with scripted generations in two
 * families' formats: malformed calls (bad JSON, unknown tool, truncated output, a second call
 * where the template allows one) become tool errors the model sees, the episode goes on, and all
 * turns are one tracked sequence.
 */
import { describe, expect, it } from "vitest";
import type { TokenGenerationRequest } from "../../../src/inference/backends/types";
import { TrackingManagedServer } from "../../../src/inference/managed-server";
import { getTokenizer } from "../../../src/inference/tokenizers/index";
import type { InferenceClient, TokensAndLogprobs } from "../../../src/inference/types";
import {
  type AssistantTurn,
  BaseEnvConfigSchema,
  type EpisodeStart,
  MultiTurnEnv,
  parseEnvConfig,
  Toolbox,
  ToolEnvConfigSchema,
} from "../../../src/sdk/env";

async function scriptedInference(family: string, texts: string[]) {
  const tokenizer = await getTokenizer(family);
  const requests: TokenGenerationRequest[] = [];
  let turn = 0;
  const managed = new TrackingManagedServer({
    tokenizer,
    modelName: "m",
    tokenSupport: "exact",
    generate: async (request): Promise<TokensAndLogprobs> => {
      requests.push(request);
      const text = texts[turn++] ?? "";
      const truncated = text.endsWith("…");
      const body = tokenizer.encode(text.replace(/…$/, ""), { addSpecialTokens: false });
      const out = truncated ? body : [...body, tokenizer.eosTokenId];
      return {
        promptTokens: request.inputIds,
        outputTokens: [out],
        outputLogprobs: [out.map(() => -0.5)],
        finishReasons: [truncated ? "length" : "stop"],
      };
    },
    chatCompletion: () => Promise.reject(new Error("unused")),
    completion: () => Promise.reject(new Error("unused")),
  });
  const inference = {
    managedServer: async () => managed,
  } as unknown as InferenceClient; // why: the loop only asks for a ManagedServer
  return { tokenizer, inference, requests };
}

const ToolsConfig = ToolEnvConfigSchema.extend({});

class AddEnv extends MultiTurnEnv<{ a: number; b: number }, (typeof ToolsConfig)["_output"]> {
  async getNextItem() {
    return { a: 2, b: 3 };
  }

  protected override setupEpisode(item: { a: number; b: number }): EpisodeStart<undefined> {
    const toolbox = new Toolbox({
      add: {
        timeoutMs: 1000,
        definition: {
          type: "function",
          function: {
            name: "add",
            parameters: {
              type: "object",
              properties: { a: { type: "number" }, b: { type: "number" } },
            },
          },
        },
        run: (args) => String(Number(args.a) + Number(args.b)),
      },
    });
    return {
      messages: [{ role: "user", content: `Add ${item.a} and ${item.b} with the add tool.` }],
      state: undefined,
      toolbox,
    };
  }
}

describe("MultiTurnEnv", () => {
  it("Qwen (Hermes): bad JSON, an unknown tool and truncated output are tool errors; the episode continues", async () => {
    const { tokenizer, inference } = await scriptedInference("qwen3", [
      '<tool_call>\n{"name": "add", "arguments": {"a": 2,, }}\n</tool_call>',
      '<tool_call>\n{"name": "multiply", "arguments": {"a": 2, "b": 3}}\n</tool_call>',
      '<tool_call>\n{"name": "add", "argum…',
      '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>',
      "It is 5.",
    ]);
    const env = new AddEnv(parseEnvConfig(ToolsConfig, {}), inference, tokenizer);
    const e = await env.rollout(await env.getNextItem());
    expect(e.finished).toBe(true);
    const tools = e.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
    expect(tools).toEqual([
      expect.stringMatching(/^tool error: bad tool call \(not JSON\)/),
      "multiply error: tool 'multiply' is not allowed",
      "tool error: truncated tool call: <tool_call> without </tool_call>",
      "add result: 5",
    ]);
    expect(e.turns.map((t) => t.reply.finishReason)).toEqual([
      "stop",
      "tool_calls",
      "length",
      "tool_calls",
      "stop",
    ]);
    // Five assistant turns, one tracked sequence: five trainable spans.
    const spans = e.node.masked_tokens.filter(
      (m, i, a) => m !== -100 && (i === 0 || a[i - 1] === -100),
    );
    expect(spans).toHaveLength(5);
    // The errors were in the prompt the model saw next.
    expect(tokenizer.decode(e.node.tokens)).toContain("tool error: truncated tool call");
  });

  it("Llama 3.2: a second call in one reply is refused with a clear error, the first runs", async () => {
    const { tokenizer, inference } = await scriptedInference("llama3_2", [
      '{"name": "add", "parameters": {"a": 2, "b": 3}}; {"name": "add", "parameters": {"a": 1, "b": 1}}',
      '{"name": "add", "parameters": {"a": 1, "b": 1}}',
      "Done: 5 and 2.",
    ]);
    const env = new AddEnv(parseEnvConfig(ToolsConfig, {}), inference, tokenizer);
    const e = await env.rollout(await env.getNextItem());
    expect(e.finished).toBe(true);
    expect(e.turns[0]!.tools.map((t) => t.observation)).toEqual([
      expect.stringMatching(
        /^tool error: one tool call per message: .*Llama 3\.2.*add was not run/,
      ),
      "add result: 5",
    ]);
    expect(e.turns[1]!.tools.map((t) => t.observation)).toEqual(["add result: 2"]);
    // The template writes a tool result as JSON (a string is "iterable" to Jinja, as in HF).
    expect(tokenizer.decode(e.node.tokens)).toContain(
      '<|start_header_id|>ipython<|end_header_id|>\n\n"add result: 5"',
    );
  });

  it("tool_format in the config overrides the family's format", async () => {
    const { tokenizer, inference, requests } = await scriptedInference("llama3_2", [
      '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>',
      "5",
    ]);
    const env = new AddEnv(
      parseEnvConfig(ToolsConfig, { tool_format: "hermes" }),
      inference,
      tokenizer,
    );
    expect(env.toolFormat().name).toBe("hermes");
    const e = await env.rollout(await env.getNextItem());
    expect(e.turns[0]!.tools[0]!.observation).toBe("add result: 5");
    expect(requests).toHaveLength(2);
    expect(() => parseEnvConfig(ToolsConfig, { tool_format: "xml" })).toThrow(/tool_format/);
  });

  it("with no tools, isDone and envResponse drive the loop (a game)", async () => {
    const { tokenizer, inference } = await scriptedInference("qwen3", ["one", "two", "three"]);
    class Count extends MultiTurnEnv<
      { n: number },
      (typeof BaseEnvConfigSchema)["_output"],
      { said: string[] }
    > {
      async getNextItem() {
        return { n: 2 };
      }
      protected override setupEpisode(): EpisodeStart<{ said: string[] }> {
        return { messages: [{ role: "user", content: "Count." }], state: { said: [] } };
      }
      protected override isDone(): boolean {
        return false;
      }
      protected override envResponse(turn: AssistantTurn, state: { said: string[] }) {
        state.said.push(turn.text);
        return state.said.length >= 2 ? null : [{ role: "user", content: "Go on." }];
      }
    }
    const env = new Count(parseEnvConfig(BaseEnvConfigSchema, {}), inference, tokenizer);
    const e = await env.rollout({ n: 2 });
    expect(e.state.said).toEqual(["one", "two"]);
    expect(e.finished).toBe(true);
    expect(e.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
  });

  it("a reply that leaves the model nothing to answer ends the episode, whatever isDone says", async () => {
    const { tokenizer, inference, requests } = await scriptedInference("qwen3", [
      '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>',
      "It is 5.",
      "It is still 5.",
    ]);
    class NeverDone extends AddEnv {
      protected override isDone(): boolean {
        return false;
      }
    }
    const env = new NeverDone(parseEnvConfig(ToolsConfig, {}), inference, tokenizer);
    const e = await env.rollout(await env.getNextItem());
    expect(e.finished).toBe(true);
    expect(requests).toHaveLength(2);
    expect(e.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    const spans = e.node.masked_tokens.filter(
      (m, i, a) => m !== -100 && (i === 0 || a[i - 1] === -100),
    );
    expect(spans).toHaveLength(2);
  });
});
