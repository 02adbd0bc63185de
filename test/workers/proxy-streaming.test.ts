/**
 * The inference proxy's `stream: true` in workerd: OpenAI SSE chunks whose tracked sequence is
 * exactly the non-streamed twin's, a client that leaves mid-stream (upstream aborted, turn
 * dropped, session usable), and text-only `openai` servers (refused unless the session opts into
 * re-tokenization, whose group says so).
 */
import { describe, expect, it } from "vitest";
import { HfTokenizer, type TokenizerFiles } from "../../src/inference/tokenizers/index";
import type { Tokenizer } from "../../src/inference/types";
import tokenizerJson from "../fixtures/tokenizers/tiny/tokenizer.json";
import tokenizerConfig from "../fixtures/tokenizers/tiny/tokenizer_config.json";
import { json, uniqueRun } from "./helpers";
import {
  app,
  appWith,
  SERVERS,
  type SeenRequest,
  scriptedVllm,
  TOOLS,
  toolConversation,
} from "./scripted-vllm";

interface Node {
  tokens: number[];
  masked_tokens: number[];
  logprobs: number[];
  metadata: Record<string, unknown>;
}

interface Streamed {
  chunks: Record<string, unknown>[];
  done: boolean;
  message: {
    role: "assistant";
    content: string | null;
    tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  };
  finishReason: string | null;
  usage: Record<string, number> | null;
}

/** Reads an SSE body to its end and assembles the message like an OpenAI client does. */
async function readStream(res: Response): Promise<Streamed> {
  const text = await res.text();
  const events = text
    .split("\n\n")
    .filter((e) => e.startsWith("data: "))
    .map((e) => e.slice("data: ".length));
  const done = events.at(-1) === "[DONE]";
  const chunks = events.filter((e) => e !== "[DONE]").map((e) => JSON.parse(e));
  let content = "";
  let role: string | null = null;
  const calls: NonNullable<Streamed["message"]["tool_calls"]> = [];
  let finishReason: string | null = null;
  let usage: Record<string, number> | null = null;
  for (const chunk of chunks) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices ?? []) {
      const delta = choice.delta ?? {};
      role = delta.role ?? role;
      content += delta.content ?? "";
      for (const call of delta.tool_calls ?? []) {
        calls[call.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } };
        const at = calls[call.index]!;
        at.id = call.id ?? at.id;
        at.function.name += call.function?.name ?? "";
        at.function.arguments += call.function?.arguments ?? "";
      }
      finishReason = choice.finish_reason ?? finishReason;
    }
  }
  expect(role).toBe("assistant");
  return {
    chunks,
    done,
    message: {
      role: "assistant",
      content: content || null,
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    },
    finishReason,
    usage,
  };
}

const tinyTokenizer = async (name: string): Promise<Tokenizer> =>
  new HfTokenizer(name, { tokenizerJson, tokenizerConfig } as TokenizerFiles);

describe("inference proxy: stream: true", () => {
  it("streams OpenAI chunks (tool_calls deltas, finish_reason, usage, [DONE]) and tracks exactly the non-streamed twin", async () => {
    const run = uniqueRun("stream");
    const send = app([]);
    expect((await send(`/v1/runs/${run}/inference`, "PUT", SERVERS)).status).toBe(200);
    const twin = await toolConversation(send, `/v1/runs/${run}/proxy/twin`);

    const base = `/v1/runs/${run}/proxy/streamed`;
    const messages: Record<string, unknown>[] = twin.slice(0, 2);
    const observations = ["calculator result: 5", "kv_set result: ok"];
    for (let turn = 0; turn < 3; turn++) {
      const res = await send(`${base}/v1/chat/completions`, "POST", {
        messages,
        tools: TOOLS,
        stream: true,
        stream_options: { include_usage: true },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/event-stream");
      const streamed = await readStream(res);
      expect(streamed.done).toBe(true);
      expect(streamed.chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
      expect(new Set(streamed.chunks.map((c) => c.id)).size).toBe(1);
      // The usage chunk is last, with no choices; the usage equals the tracked counts.
      expect(streamed.chunks.at(-1)!.choices).toEqual([]);
      expect(streamed.usage!.total_tokens).toBe(
        streamed.usage!.prompt_tokens! + streamed.usage!.completion_tokens!,
      );
      const expected = twin[2 + turn * 2] as Streamed["message"];
      expect(streamed.message.content).toBe(expected.content);
      if (turn < 2) {
        expect(streamed.finishReason).toBe("tool_calls");
        const call = streamed.message.tool_calls![0]!;
        expect(call.id).toMatch(/\S/);
        expect(call.function).toEqual(expected.tool_calls![0]!.function);
        messages.push(streamed.message);
        messages.push({ role: "tool", tool_call_id: call.id, content: observations[turn] });
      } else {
        expect(streamed.finishReason).toBe("stop");
        expect(streamed.message.tool_calls).toBeUndefined();
        messages.push(streamed.message);
      }
    }
    const nodes = async (session: string) =>
      (await json<{ nodes: Node[] }>(send(`/v1/runs/${run}/proxy/${session}/state`))).nodes;
    const [streamed, plain] = [await nodes("streamed"), await nodes("twin")];
    expect(streamed).toHaveLength(1);
    expect(streamed[0]!.tokens).toEqual(plain[0]!.tokens);
    expect(streamed[0]!.masked_tokens).toEqual(plain[0]!.masked_tokens);
    expect(streamed[0]!.logprobs).toEqual(plain[0]!.logprobs);
  });

  it("streams a text completion with its usage", async () => {
    const run = uniqueRun("stream");
    const send = app([]);
    expect((await send(`/v1/runs/${run}/inference`, "PUT", SERVERS)).status).toBe(200);
    const res = await send(`/v1/runs/${run}/proxy/c/v1/completions`, "POST", {
      prompt: "Once",
      stream: true,
      stream_options: { include_usage: true },
    });
    const text = await res.text();
    const chunks = text
      .split("\n\n")
      .filter((e) => e.startsWith("data: {"))
      .map((e) => JSON.parse(e.slice(6)));
    const choices = chunks.flatMap((c) => c.choices as { text: string; finish_reason: unknown }[]);
    expect(choices.map((c) => c.text).join("")).toBe(" and so on");
    expect(choices.at(-1)!.finish_reason).toBe("length");
    expect(chunks.at(-1)!.usage).toEqual({
      prompt_tokens: 4,
      completion_tokens: 10,
      total_tokens: 14,
    });
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
  });

  it("a client that leaves mid-stream aborts the upstream request and its turn is dropped", async () => {
    const run = uniqueRun("stream");
    let hang = true;
    let started!: () => void;
    const upstreamStarted = new Promise<void>((resolve) => (started = resolve));
    let aborted!: (reason: unknown) => void;
    const upstreamAborted = new Promise<unknown>((resolve) => (aborted = resolve));
    const answer = scriptedVllm([]);
    const send = appWith({
      fetch: (input, init) => {
        if (!hang) return answer(input, init);
        started();
        return new Promise<Response>((_, reject) => {
          init?.signal?.addEventListener("abort", () => {
            aborted(init.signal?.reason);
            reject(init.signal?.reason);
          });
        });
      },
    });
    expect((await send(`/v1/runs/${run}/inference`, "PUT", SERVERS)).status).toBe(200);
    const base = `/v1/runs/${run}/proxy/leaver`;
    const request = { messages: [{ role: "user", content: "hi" }], stream: true };
    const res = await send(`${base}/v1/chat/completions`, "POST", request);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain('"role":"assistant"');
    await upstreamStarted;
    await reader.cancel();
    const reason = (await upstreamAborted) as Error;
    expect(reason.name).toBe("AbortError");
    // Dropped: the session tracks nothing and takes its next call as usual.
    const state = await json<{ nodes: Node[] }>(send(`${base}/state`));
    expect(state.nodes).toEqual([]);
    hang = false;
    const next = await send(`${base}/v1/chat/completions`, "POST", { ...request, stream: false });
    expect(next.status).toBe(200);
    expect((await json<{ nodes: Node[] }>(send(`${base}/state`))).nodes).toHaveLength(1);
  });
});

describe("inference proxy: text-only servers", () => {
  const OPENAI = [
    {
      base_url: "http://openai.test/v1",
      server_type: "openai",
      model_name: "tiny-chat",
      tokenizer_name: "tiny",
      health_check: false,
    },
  ];
  const seen: SeenRequest[] = [];
  /** An OpenAI-compatible server: text only, its own tool calling. */
  const openaiServer = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const body = (await request.json()) as Record<string, unknown>;
    seen.push({ url: request.url, authorization: null, body });
    const turn = (body.messages as { role: string }[]).filter((m) => m.role === "assistant").length;
    return Response.json({
      id: "chatcmpl-openai",
      model: "tiny-chat",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: turn === 0 ? "hello there" : "bye now" },
          finish_reason: "stop",
        },
      ],
    });
  };

  it("are refused with a 4xx naming the way out, streaming or not", async () => {
    const run = uniqueRun("textonly");
    const send = appWith({ fetch: openaiServer, getTokenizer: tinyTokenizer });
    expect((await send(`/v1/runs/${run}/inference`, "PUT", OPENAI)).status).toBe(200);
    const before = seen.length;
    for (const stream of [false, true]) {
      const res = await send(`/v1/runs/${run}/proxy/s/v1/chat/completions`, "POST", {
        messages: [{ role: "user", content: "hi" }],
        stream,
      });
      expect(res.status).toBe(400);
      const { detail } = await json<{ detail: string }>(res);
      expect(detail).toContain("server_type openai");
      expect(detail).toContain('"retokenize": true');
    }
    const completion = await send(`/v1/runs/${run}/proxy/s/v1/completions`, "POST", {
      prompt: "hi",
    });
    expect(completion.status).toBe(400);
    expect(seen.length).toBe(before);
  });

  it("serve a session that opted into re-tokenization, whose group says retokenized", async () => {
    const run = uniqueRun("textonly");
    const send = appWith({ fetch: openaiServer, getTokenizer: tinyTokenizer });
    expect((await send(`/v1/runs/${run}/inference`, "PUT", OPENAI)).status).toBe(200);
    const base = `/v1/runs/${run}/proxy/r`;
    const messages: Record<string, unknown>[] = [{ role: "user", content: "hi" }];
    const first = await send(`${base}/v1/chat/completions`, "POST", {
      messages,
      retokenize: true,
    });
    expect(first.status, await first.clone().text()).toBe(200);
    const reply = await json<{ choices: { message: Record<string, unknown> }[] }>(first);
    messages.push(reply.choices[0]!.message);
    messages.push({ role: "user", content: "and now?" });
    // Kept for the session: the next call needs no flag (and the server never sees it).
    const second = await send(`${base}/v1/chat/completions`, "POST", { messages });
    expect(second.status).toBe(200);
    expect(seen.at(-1)!.body.retokenize).toBeUndefined();
    const { nodes } = await json<{ nodes: Node[] }>(send(`${base}/state`));
    expect(nodes).toHaveLength(1);
    expect(nodes[0]!.metadata).toMatchObject({ retokenized: true, logprobs_unavailable: true });
    const tokenizer = await tinyTokenizer("tiny");
    const trainable = nodes[0]!.masked_tokens.filter((m) => m !== -100);
    expect(tokenizer.decode(trainable)).toContain("bye now");
    expect(tokenizer.decode(trainable)).toContain("hello there");

    const finished = await json<{ group_id: number }>(
      send(`${base}/finish`, "POST", { scores: [1] }),
    );
    const detail = await json<{ payload: Record<string, unknown> }>(
      send(`/v1/runs/${run}/groups/${finished.group_id}`),
    );
    expect(detail.payload.group_overrides).toEqual({ retokenized: true });
    expect(detail.payload.inference_logprobs ?? null).toBeNull();
    expect(detail.payload.tokens).toEqual([nodes[0]!.tokens]);
  });
});

describe("inference proxy: servers it templates for", () => {
  it("a tokenizer that cannot be loaded is a 400 naming it, streaming or not; the servers are never asked", async () => {
    const run = uniqueRun("tokenizer");
    const asked: string[] = [];
    const send = appWith({
      fetch: async (input) => {
        asked.push(String(input));
        return new Response("no", { status: 500 });
      },
    });
    const servers = [{ ...SERVERS[0], server_type: "sglang", tokenizer_name: "nobody/no-such" }];
    expect((await send(`/v1/runs/${run}/inference`, "PUT", servers)).status).toBe(200);
    for (const stream of [false, true]) {
      const res = await send(`/v1/runs/${run}/proxy/s/v1/chat/completions`, "POST", {
        messages: [{ role: "user", content: "hi" }],
        stream,
      });
      expect(res.status).toBe(400);
      const { detail } = await json<{ detail: string }>(res);
      expect(detail).toContain("tokenizer 'nobody/no-such', which cannot be loaded");
      expect(detail).toContain("set tokenizer_name");
    }
    expect(asked).toEqual([]);
  });
});
