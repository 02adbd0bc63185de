/**
 * A scripted vLLM (chat with return_token_ids, completions with prompt ids) behind the inference
 * proxy's fetch, the app that uses it, and a three-turn tool conversation through it: shared by
 * the proxy's Workers tests.
 */
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { createApp } from "../../src/api/app";
import type { Bindings } from "../../src/api/bindings";
import { createInferenceProxy, type InferenceProxyOptions } from "../../src/inference/proxy";
import { json } from "./helpers";

export const ADMIN = "admin-secret-for-proxy-tests";
export const KEY = "sk-very-secret-inference-key";
export const ROLE = { system: 1, user: 2, assistant: 3, tool: 4 } as const;
export const END = 9;

export const ids = (text: string) => [...text].map((ch) => 1000 + ch.charCodeAt(0));

/** The scripted server's chat template: role id, content ids, end id; then the assistant's role. */
export function render(messages: { role: keyof typeof ROLE; content: string | null }[]): number[] {
  const out = [0];
  for (const m of messages) out.push(ROLE[m.role], ...ids(m.content ?? ""), END);
  out.push(ROLE.assistant);
  return out;
}

export const REPLIES = [
  'Let me compute.\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "2+3"}}\n</tool_call>',
  'Storing.\n<tool_call>\n{"name": "kv_set", "arguments": {"key": "k", "value": "5"}}\n</tool_call>',
  "The result is 5.\n<answer>5</answer>",
];

export interface SeenRequest {
  url: string;
  authorization: string | null;
  body: Record<string, unknown>;
}

/** vLLM /v1/completions with return_token_ids: the prompt's ids and the sampled ids per choice. */
export function scriptedCompletion(body: Record<string, unknown>): Response {
  const prompt = typeof body.prompt === "string" ? ids(body.prompt) : (body.prompt as number[]);
  const text = " and so on";
  const output = ids(text);
  return Response.json({
    id: "cmpl-test",
    object: "text_completion",
    model: "scripted",
    choices: [
      {
        index: 0,
        text,
        finish_reason: "length",
        prompt_token_ids: prompt,
        token_ids: output,
        logprobs: {
          tokens: output.map((id) => `token_id:${id}`),
          token_logprobs: output.map(() => -0.5),
        },
      },
    ],
  });
}

export function scriptedVllm(seen: SeenRequest[], replies: readonly string[] = REPLIES) {
  return async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const body = (await request.json()) as Record<string, unknown>;
    seen.push({ url: request.url, authorization: request.headers.get("authorization"), body });
    if (request.url.endsWith("/v1/completions")) return scriptedCompletion(body);
    if (!request.url.endsWith("/chat/completions")) return new Response("no", { status: 404 });
    const messages = body.messages as { role: keyof typeof ROLE; content: string | null }[];
    const turn = messages.filter((m) => m.role === "assistant").length;
    const text = replies[Math.min(turn, replies.length - 1)]!;
    // "flood": an answer too long for a session to keep.
    const flood = messages.at(-1)?.content === "flood";
    const output = flood ? Array.from({ length: 150_000 }, () => 1065) : [...ids(text), END];
    return Response.json({
      id: "chatcmpl-test",
      object: "chat.completion",
      model: "scripted",
      prompt_token_ids: render(messages),
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: text },
          finish_reason: "stop",
          token_ids: output,
          logprobs: {
            content: output.map((id, i) => ({ token: `token_id:${id}`, logprob: -0.01 * (i + 1) })),
          },
        },
      ],
    });
  };
}

export function app(
  seen: SeenRequest[],
  overrides: Partial<Bindings> = {},
  replies: readonly string[] = REPLIES,
) {
  return appWith({ fetch: scriptedVllm(seen, replies) }, overrides);
}

/** The API with an inference proxy made from `options`; requests are sent as admin by default. */
export function appWith(
  options: InferenceProxyOptions,
  overrides: Partial<Bindings> = {},
  headers: Record<string, string> = {},
) {
  const proxied = createApp({ inferenceProxy: createInferenceProxy(options) });
  const bindings = { ...(env as unknown as Bindings), API_TOKEN: ADMIN, ...overrides };
  const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
  return (path: string, method = "GET", body?: unknown, token = ADMIN) =>
    proxied.fetch(
      new Request(`http://api.test${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
      bindings,
      ctx as unknown as ExecutionContext,
    );
}

export const SERVERS = [
  {
    base_url: "http://vllm.test/v1",
    server_type: "vllm",
    model_name: "scripted",
    api_key: KEY,
    health_check: false,
  },
];

export const TOOLS = [
  { type: "function", function: { name: "calculator", parameters: { type: "object" } } },
  { type: "function", function: { name: "kv_set", parameters: { type: "object" } } },
];

export interface Chat {
  choices: {
    message: {
      role: "assistant";
      content: string | null;
      tool_calls?: { id: string; function: { name: string; arguments: string } }[];
    };
    finish_reason: string;
  }[];
}

/** Three turns of a tool conversation, as an OpenAI client would send them. */
export async function toolConversation(send: ReturnType<typeof app>, base: string) {
  const messages: Record<string, unknown>[] = [
    { role: "system", content: "You solve tasks with tools." },
    { role: "user", content: "Tool task: compute 2+3 and store it under k." },
  ];
  const observations = ["calculator result: 5", "kv_set result: ok"];
  for (let turn = 0; turn < 3; turn++) {
    const res = await send(`${base}/v1/chat/completions`, "POST", {
      model: "anything",
      messages,
      tools: TOOLS,
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const chat = await json<Chat>(res);
    const message = chat.choices[0]!.message;
    messages.push(message);
    if (turn < 2) {
      expect(chat.choices[0]!.finish_reason).toBe("tool_calls");
      const call = message.tool_calls![0]!;
      messages.push({ role: "tool", tool_call_id: call.id, content: observations[turn] });
    } else {
      expect(message.tool_calls).toBeUndefined();
    }
  }
  return messages;
}
