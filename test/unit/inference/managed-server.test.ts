import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TokenGenerationRequest } from "../../../src/inference/backends/types";
import { TrackingManagedServer } from "../../../src/inference/managed-server";
import { ServerManager } from "../../../src/inference/server-manager";
import { getTokenizer } from "../../../src/inference/tokenizers/index";
import { LazyTokenizer } from "../../../src/inference/tokenizers/lazy";
import type { TokensAndLogprobs } from "../../../src/inference/types";
import { type Simulator, startSimulator } from "../../../src/sim/server";

describe("ManagedServer against the simulator (vllm /generate)", () => {
  let sim: Simulator;
  let manager: ServerManager;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 3 });
    manager = new ServerManager([
      {
        base_url: `${sim.url}/v1`,
        server_type: "vllm",
        model_name: "sim",
        tokenizer_name: "Qwen/Qwen3-0.6B",
      },
    ]);
  });
  afterAll(() => sim.close());

  it("masks the prompt with -100 and 1.0 and keeps exactly the sampled tokens", async () => {
    const tok = await getTokenizer("qwen3");
    const managed = await manager.managedServer({ clientTemplate: true });
    const messages = [{ role: "user", content: "What is 2+2?" }];
    const result = await managed.chatCompletion({ messages, n: 2, seed: 5 });
    const { nodes } = managed.getState();
    expect(nodes).toHaveLength(2);
    const prompt = tok.applyChatTemplate(messages, { addGenerationPrompt: true });
    const promptIds = tok.encode(prompt);
    const direct = await manager.tokensAndLogprobsCompletion({
      prompt: "",
      input_ids: promptIds,
      n: 2,
      seed: 5,
    });
    nodes.forEach((node, i) => {
      const out = direct.outputTokens[i]!;
      expect(node.tokens).toEqual([...promptIds, ...out]);
      expect(node.masked_tokens).toEqual([...promptIds.map(() => -100), ...out]);
      expect(node.logprobs).toEqual([...promptIds.map(() => 1.0), ...direct.outputLogprobs[i]!]);
      expect(node.full_text).toBe(prompt + tok.decode(out));
      expect(node.metadata.finish_reason).toBe("stop");
      expect(result.choices[i]?.message.content).toBe(tok.decode(out.slice(0, -1)));
    });
  });

  it("extends the previous node in multi-turn chat; earlier assistant turns stay trainable", async () => {
    const tok = await getTokenizer("qwen3");
    const managed = await manager.managedServer();
    const turn1 = [{ role: "user", content: "Hi" }];
    const first = await managed.chatCompletion({ messages: turn1 });
    const node1 = managed.getState().nodes[0]!;
    const reply = first.choices[0]!.message.content ?? "";
    const turn2Real = [
      ...turn1,
      { role: "assistant", content: reply },
      { role: "user", content: "More?" },
    ];
    await managed.chatCompletion({ messages: turn2Real });
    const nodes = managed.getState().nodes;
    expect(nodes).toHaveLength(1); // the extension replaced node1
    const node2 = nodes[0]!;
    expect(node2.tokens.slice(0, node1.tokens.length)).toEqual(node1.tokens);
    expect(node2.masked_tokens.slice(0, node1.masked_tokens.length)).toEqual(node1.masked_tokens);
    expect(node2.logprobs.slice(0, node1.logprobs.length)).toEqual(node1.logprobs);
    const trainable = node2.masked_tokens.filter((m) => m !== -100).length;
    expect(trainable).toBeGreaterThan(node1.masked_tokens.filter((m) => m !== -100).length);
    expect(tok.decode(node2.tokens)).toBe(node2.full_text);
    managed.reset();
    expect(managed.getState().nodes).toEqual([]);
  });

  it("completion mode extends too (documented difference from Atropos)", async () => {
    const managed = await manager.managedServer();
    await managed.completion({ prompt: "Count: one", max_tokens: 4 });
    const first = managed.getState().nodes[0]!;
    await managed.completion({ prompt: `${first.full_text} and then`, max_tokens: 4 });
    const nodes = managed.getState().nodes;
    expect(nodes).toHaveLength(1);
    expect(nodes[0]!.masked_tokens.slice(0, first.masked_tokens.length)).toEqual(
      first.masked_tokens,
    );
    expect(nodes[0]!.metadata.finish_reason).toBe("length");
  });

  it("openai servers give nodes with tokens_unavailable and no invented tokens", async () => {
    const textOnly = new ServerManager([
      { base_url: `${sim.url}/v1`, server_type: "openai", model_name: "gpt-4o" },
    ]);
    const managed = await textOnly.managedServer();
    await managed.chatCompletion({ messages: [{ role: "user", content: "hi" }], n: 2 });
    const { nodes } = managed.getState();
    expect(nodes).toHaveLength(2);
    for (const node of nodes) {
      expect(node.tokens).toEqual([]);
      expect(node.masked_tokens).toEqual([]);
      expect(node.logprobs).toEqual([]);
      expect(node.metadata.tokens_unavailable).toBe(true);
      expect(node.full_text).toContain("hi");
    }
  });
});

describe("ManagedServer chats templated by the server (vllm return_token_ids)", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 7 });
  });
  afterAll(() => sim.close());

  const config = (serverType: "vllm" | "sglang") => ({
    base_url: `${sim.url}/v1`,
    server_type: serverType,
    model_name: "sim",
    tokenizer_name: "qwen3",
  });

  /** A LazyTokenizer over the real qwen3 tokenizer that counts its loads. */
  function countingTokenizer() {
    const counter = { loads: 0 };
    const tokenizer = new LazyTokenizer("qwen3", async () => {
      counter.loads++;
      return getTokenizer("qwen3");
    });
    return { counter, tokenizer };
  }

  const messages = [{ role: "user", content: "What is 3+4?" }];

  it("tracks the server's prompt ids, sampled ids and logprobs and never loads the tokenizer", async () => {
    const manager = new ServerManager([config("vllm")]);
    const { counter, tokenizer } = countingTokenizer();
    const before = { ...sim.stats().byRoute };
    const managed = await manager.managedServer({ tokenizer });
    const result = await managed.chatCompletion({ messages, n: 2, seed: 11 });
    const { nodes } = managed.getState();
    expect(counter.loads).toBe(0);
    expect(tokenizer.isLoaded).toBe(false);
    const route = (key: string) => (sim.stats().byRoute[key] ?? 0) - (before[key] ?? 0);
    expect(route("POST /v1/chat/completions")).toBe(1);
    expect(route("POST /v1/completions")).toBe(0);

    // The same request straight to the server: the nodes hold exactly what it returns.
    const direct = await manager.chatCompletionWithTokens({ messages, n: 2, seed: 11 });
    const prompt = direct.tokens.promptTokens;
    const tok = await getTokenizer("qwen3");
    expect(prompt).toEqual(
      tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: true })),
    );
    expect(nodes).toHaveLength(2);
    nodes.forEach((node, i) => {
      const out = direct.tokens.outputTokens[i]!;
      expect(out.length).toBeGreaterThan(0);
      expect(node.tokens).toEqual([...prompt, ...out]);
      expect(node.masked_tokens).toEqual([...prompt.map(() => -100), ...out]);
      expect(node.logprobs).toEqual([
        ...prompt.map(() => 1.0),
        ...direct.tokens.outputLogprobs[i]!,
      ]);
      expect(node.metadata).toEqual({
        finish_reason: direct.tokens.finishReasons[i],
        prompt_templated_by_server: true,
      });
      expect(result.choices[i]!.message.content).toBe(direct.chat.choices[i]!.message.content);
    });
    expect(counter.loads).toBe(0);
  });

  it("a continuation takes the client path: loads once and extends the server's node", async () => {
    const manager = new ServerManager([config("vllm")]);
    const { counter, tokenizer } = countingTokenizer();
    const managed = await manager.managedServer({ tokenizer });
    const first = await managed.chatCompletion({ messages, seed: 2 });
    expect(counter.loads).toBe(0);
    const node1 = managed.getState().nodes[0]!;
    await managed.chatCompletion({
      messages: [
        ...messages,
        { role: "assistant", content: first.choices[0]!.message.content ?? "" },
        { role: "user", content: "And 5+6?" },
      ],
      seed: 3,
    });
    expect(counter.loads).toBe(1);
    const nodes = managed.getState().nodes;
    expect(nodes).toHaveLength(1);
    expect(nodes[0]!.tokens.slice(0, node1.tokens.length)).toEqual(node1.tokens);
    expect(nodes[0]!.masked_tokens.slice(0, node1.tokens.length)).toEqual(node1.masked_tokens);
    expect(nodes[0]!.logprobs.slice(0, node1.tokens.length)).toEqual(node1.logprobs);
    expect(nodes[0]!.full_text).toBe(tokenizer.decode(nodes[0]!.tokens));
  });

  it("chats with tools stay on the client path (loads the tokenizer)", async () => {
    const manager = new ServerManager([config("vllm")]);
    const { counter, tokenizer } = countingTokenizer();
    const before = sim.stats().byRoute["POST /v1/chat/completions"] ?? 0;
    const managed = await manager.managedServer({ tokenizer });
    const tools = [{ type: "function" as const, function: { name: "add" } }];
    await managed.chatCompletion({ messages, tools });
    expect(counter.loads).toBe(1);
    expect(sim.stats().byRoute["POST /v1/chat/completions"] ?? 0).toBe(before);
    expect(managed.getState().nodes[0]!.metadata.prompt_templated_by_server).toBeUndefined();
  });

  it("other backends template on the client and load the tokenizer once", async () => {
    const manager = new ServerManager([config("sglang")]);
    const { counter, tokenizer } = countingTokenizer();
    const managed = await manager.managedServer({ tokenizer });
    expect(counter.loads).toBe(0);
    await managed.chatCompletion({ messages, n: 2 });
    await managed.chatCompletion({ messages: [{ role: "user", content: "Again" }] });
    expect(counter.loads).toBe(1);
    const tok = await getTokenizer("qwen3");
    const prompt = tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: true }));
    expect(managed.getState().nodes[0]!.tokens.slice(0, prompt.length)).toEqual(prompt);
  });

  it("a vLLM without prompt_token_ids (< 0.10.2) falls back to the client path for good", async () => {
    let chatCalls = 0;
    // The answers of an older vLLM: no prompt_token_ids on the chat response.
    const oldVllm = async (input: string, init?: RequestInit) => {
      const response = await fetch(input, init);
      if (!input.endsWith("/chat/completions")) return response;
      chatCalls++;
      const { prompt_token_ids: _dropped, ...body } = (await response.json()) as Record<
        string,
        unknown
      >;
      return Response.json(body);
    };
    const manager = new ServerManager([config("vllm")], { fetch: oldVllm });
    const { counter, tokenizer } = countingTokenizer();
    const managed = await manager.managedServer({ tokenizer });
    await managed.chatCompletion({ messages });
    expect(counter.loads).toBe(1);
    expect(managed.getState().nodes[0]!.metadata.prompt_templated_by_server).toBeUndefined();
    const again = await manager.managedServer({ tokenizer });
    await again.chatCompletion({ messages });
    expect(chatCalls).toBe(1); // the server is remembered as unable
  });
});

describe("ManagedServer tool calls and think blocks (scripted generation)", () => {
  /** A generation double that answers the given texts, token-exact, with fixed logprobs. */
  async function scripted(texts: string[]) {
    const tok = await getTokenizer("qwen3");
    const requests: TokenGenerationRequest[] = [];
    let turn = 0;
    const managed = new TrackingManagedServer({
      tokenizer: tok,
      modelName: "m",
      tokenSupport: "exact",
      generate: async (request): Promise<TokensAndLogprobs> => {
        requests.push(request);
        const out = [
          ...tok.encode(texts[turn++] ?? "", { addSpecialTokens: false }),
          tok.eosTokenId,
        ];
        return {
          promptTokens: request.inputIds,
          outputTokens: [out],
          outputLogprobs: [out.map(() => -0.5)],
          finishReasons: ["stop"],
        };
      },
      chatCompletion: () => Promise.reject(new Error("unused")),
      completion: () => Promise.reject(new Error("unused")),
    });
    return { tok, managed, requests };
  }

  const tools = [
    { type: "function" as const, function: { name: "add", parameters: { type: "object" } } },
  ];

  it("parses Hermes tool calls and replays them as raw text so the next turn extends", async () => {
    const raw =
      '<think>\nneed tool\n</think>\n\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>';
    const { managed, requests } = await scripted([raw, "It is 3."]);
    const messages = [{ role: "user", content: "1+2?" }];
    const first = await managed.chatCompletion({ messages, tools });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.tool_calls?.[0]?.function).toEqual({
      name: "add",
      arguments: '{"a":1,"b":2}',
    });
    expect(choice.message.content).toBe("<think>\nneed tool\n</think>");
    const node1 = managed.getState().nodes[0]!;

    await managed.chatCompletion({
      messages: [
        ...messages,
        choice.message,
        { role: "tool", tool_call_id: choice.message.tool_calls![0]!.id, content: "3" },
      ],
      tools,
    });
    const nodes = managed.getState().nodes;
    expect(nodes).toHaveLength(1);
    expect(requests[1]!.inputIds.slice(0, node1.tokens.length)).toEqual(node1.tokens);
    expect(nodes[0]!.masked_tokens.slice(0, node1.tokens.length)).toEqual(node1.masked_tokens);
  });

  it("tool_choice none leaves the text alone", async () => {
    const { managed } = await scripted(['<tool_call>{"name":"add","arguments":{}}</tool_call>']);
    const result = await managed.chatCompletion({
      messages: [{ role: "user", content: "x" }],
      tools,
      tool_choice: "none",
    });
    expect(result.choices[0]?.finish_reason).toBe("stop");
    expect(result.choices[0]?.message.tool_calls).toBeUndefined();
  });

  it("keeps earlier think blocks in the prompt (placeholders) unless preserveThinkBlocks", async () => {
    const answer = "<think>\nsum\n</think>\n\n4";
    const { managed, requests, tok } = await scripted([answer, "6"]);
    const turn1 = [{ role: "user", content: "2+2?" }];
    const first = await managed.chatCompletion({ messages: turn1 });
    expect(first.choices[0]?.message.content).toBe(answer);
    await managed.chatCompletion({
      messages: [
        ...turn1,
        { role: "assistant", content: answer },
        { role: "user", content: "3+3?" },
      ],
    });
    expect(managed.getState().nodes).toHaveLength(1);
    expect(tok.decode(requests[1]!.inputIds)).toContain("<think>\nsum\n</think>");
  });
});
