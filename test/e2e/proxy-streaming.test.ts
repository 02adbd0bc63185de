/**
 * The inference proxy in front of every token-exact server type, streaming: `npm run dev` in front
 * of the simulator speaking vllm-generate, SGLang, TRL and Atropos' /generate (the proxy templates
 * the chat with the run's tokenizer), a three-turn tool conversation plain and streamed, each
 * group equal to a direct ManagedServer run; the unmodified Python `openai` client streaming the
 * same tool task, its group equal to its non-streamed twin's; a client that leaves mid-stream
 * (upstream request aborted, turn dropped); and the proxy's forwarding against the llama.cpp
 * engine (a tiny real model) equal to a direct ManagedServer run.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage } from "../../src/core/wire/group-types";
import { emptyTracking } from "../../src/core/wire/proxy-session";
import { parseServerConfig, type ServerType } from "../../src/core/wire/server-config";
import { closeLlamaRuntime, startEngine } from "../../src/engine/index";
import { createInferenceProxy } from "../../src/inference/proxy";
import { ServerManager } from "../../src/inference/server-manager";
import { type Simulator, startSimulator } from "../../src/sim/server";
import { TINY_TOKENIZER, tinyModel } from "./engine-fixture";
import { type DevServer, ROOT, startDevServer } from "./harness";
import { directRun, type Payload, type Transcript } from "./proxy-direct";

const run = promisify(execFile);
const examples = join(ROOT, "examples", "python");

const TOOLS: Transcript["tools"] = [
  { type: "function", function: { name: "calculator", parameters: { type: "object" } } },
  { type: "function", function: { name: "kv_set", parameters: { type: "object" } } },
];
const TASK = [
  { role: "system", content: "You are an agent that solves tasks with tools." },
  {
    role: "user",
    content:
      'Tool task: compute 7 * 6 with the calculator tool, store the result under the key "memo" with kv_set, then reply with the result inside <answer></answer> tags.',
  },
];
const OBSERVATIONS = ["calculator result: 42", "kv_set result: ok"];

const simServer = (url: string, type: ServerType) => ({
  base_url: `${url}/v1`,
  server_type: type,
  model_name: "sim-policy",
  tokenizer_name: "qwen3",
  health_check: false,
});

/** The events of an SSE body, assembled into the assistant message like an OpenAI client. */
function assemble(body: string): { message: Record<string, unknown>; done: boolean } {
  const events = body
    .split("\n\n")
    .filter((e) => e.startsWith("data: "))
    .map((e) => e.slice(6));
  let content = "";
  const calls: { id: string; type: string; function: { name: string; arguments: string } }[] = [];
  for (const event of events.filter((e) => e !== "[DONE]")) {
    const chunk = JSON.parse(event) as { choices: { delta: Record<string, unknown> }[] };
    for (const { delta } of chunk.choices) {
      content += (delta.content as string | undefined) ?? "";
      for (const call of (delta.tool_calls ?? []) as (typeof calls)[number][] &
        { index: number }[]) {
        calls[call.index] = { id: call.id, type: "function", function: call.function };
      }
    }
  }
  const message = {
    role: "assistant",
    content: content || null,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
  };
  return { message, done: events.at(-1) === "[DONE]" };
}

describe("inference proxy: every token-exact server type, streaming", () => {
  let server: DevServer;
  let sim: Simulator;
  let slow: Simulator;
  let python: string;
  beforeAll(async () => {
    const [install, dev, simulator, slowSimulator] = await Promise.all([
      run("bash", [join(examples, "install_openai.sh")], { timeout: 300_000 }),
      startDevServer(),
      startSimulator({ correctProbability: 1 }),
      // Answers after a minute: a request still running when the client leaves.
      startSimulator({ correctProbability: 1, latencyMs: 60_000 }),
    ]);
    python = install.stdout.trim().split("\n").at(-1) ?? "";
    server = dev;
    sim = simulator;
    slow = slowSimulator;
  }, 600_000);
  afterAll(async () => {
    await server?.stop();
    await sim?.close();
    await slow?.close();
  });

  async function post(path: string, body: unknown, init: RequestInit = {}): Promise<Response> {
    return fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      ...init,
    });
  }

  async function putInference(runName: string, config: Record<string, unknown>): Promise<void> {
    const res = await fetch(`${server.url}/v1/runs/${runName}/inference`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([config]),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  }

  /** The tool task through a proxy session (plain or streamed); finished into a group. */
  async function conversation(runName: string, session: string, stream: boolean, seed: number) {
    const base = `/v1/runs/${runName}/proxy/${session}`;
    const messages: Record<string, unknown>[] = structuredClone(TASK);
    for (let turn = 0; turn < 3; turn++) {
      const request = {
        messages,
        tools: TOOLS,
        temperature: 1,
        max_tokens: 256,
        seed: seed + turn,
      };
      const res = await post(`${base}/v1/chat/completions`, { ...request, stream });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      const message = stream
        ? assemble(text).message
        : (JSON.parse(text) as { choices: { message: Record<string, unknown> }[] }).choices[0]!
            .message;
      if (stream) expect(assemble(text).done).toBe(true);
      messages.push(message);
      const calls = (message.tool_calls ?? []) as { id: string }[];
      if (calls.length === 0) break;
      for (const call of calls) {
        messages.push({ role: "tool", tool_call_id: call.id, content: OBSERVATIONS[turn] });
      }
    }
    expect(messages.map((m) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "assistant",
    ]);
    const finish = await post(`${base}/finish`, { scores: [1] });
    const { group_id } = (await finish.json()) as { group_id: number };
    return { messages, payload: await groupPayload(runName, group_id) };
  }

  async function groupPayload(runName: string, id: number): Promise<Payload> {
    const res = await fetch(`${server.url}/v1/runs/${runName}/groups/${id}`);
    expect(res.status).toBe(200);
    return ((await res.json()) as { payload: Payload }).payload;
  }

  it.each(["vllm-generate", "sglang", "trl", "atropos"] as const)(
    "%s: the proxy templates with the run's tokenizer; plain and streamed groups equal a direct ManagedServer run",
    async (type) => {
      const runName = `types-${type}`;
      await putInference(runName, simServer(sim.url, type));
      const plain = await conversation(runName, "plain", false, 30);
      const streamed = await conversation(runName, "streamed", true, 30);
      const direct = await directRun(
        simServer(sim.url, type),
        { messages: plain.messages, tools: TOOLS },
        30,
      );
      for (const { payload } of [plain, streamed]) {
        expect(payload.tokens).toEqual([direct.tokens]);
        expect(payload.masks).toEqual([direct.masked_tokens]);
        expect(payload.inference_logprobs).toEqual([direct.logprobs]);
      }
      const turns = direct.masked_tokens.filter(
        (m, i) => m !== -100 && direct.masked_tokens[i - 1] === -100,
      );
      expect(turns).toHaveLength(3);
    },
  );

  it("the Python openai client streaming three tool turns: its group equals its non-streamed twin's", async () => {
    for (const type of ["vllm", "sglang"] as const) {
      const runName = `py-stream-${type}`;
      await putInference(runName, simServer(sim.url, type));
      const payloads: Payload[] = [];
      for (const stream of [true, false]) {
        const args = [join(examples, "proxy_agent.py"), "--api", server.url, "--run", runName];
        args.push("--session", stream ? "streamed" : "plain", "--seed", "21");
        const { stdout } = await run(python, stream ? [...args, "--stream"] : args, {
          timeout: 120_000,
        });
        const transcript = JSON.parse(stdout) as Transcript & { usages?: unknown[] };
        expect(transcript.messages.filter((m) => m.role === "assistant")).toHaveLength(3);
        expect(transcript.finish).toMatchObject({ status: "received", sequences: 1 });
        if (stream) expect(transcript.usages).toHaveLength(3);
        payloads.push(await groupPayload(runName, transcript.finish.group_id));
      }
      const [streamed, plain] = payloads as [Payload, Payload];
      expect(streamed.tokens).toEqual(plain.tokens);
      expect(streamed.masks).toEqual(plain.masks);
      expect(streamed.inference_logprobs).toEqual(plain.inference_logprobs);
      expect(streamed.scores).toEqual([1.5]);
    }
  });

  it("a client that leaves mid-stream: the upstream request is aborted and the turn dropped", async () => {
    /** Waits (bounded) until the slow simulator holds `count` requests open. */
    const inFlight = async (count: number, withinMs: number) => {
      const until = Date.now() + withinMs;
      while (slow.stats().inFlight !== count && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return slow.stats().inFlight;
    };
    for (const type of ["vllm", "sglang"] as const) {
      const runName = `leave-${type}`;
      await putInference(runName, simServer(slow.url, type));
      const controller = new AbortController();
      const base = `/v1/runs/${runName}/proxy/leaver`;
      const res = await post(
        `${base}/v1/chat/completions`,
        { messages: TASK, tools: TOOLS, stream: true, seed: 1 },
        { signal: controller.signal },
      );
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(first).toContain('"role":"assistant"');
      // The upstream request is running (it would answer in a minute) when the client leaves.
      expect(await inFlight(1, 30_000)).toBe(1);
      controller.abort();
      expect(await inFlight(0, 10_000)).toBe(0);
      const state = await fetch(`${server.url}${base}/state`);
      expect(((await state.json()) as { nodes: unknown[] }).nodes).toEqual([]);
    }
  });
});

describe("inference proxy: the llama.cpp engine behind a client-templated server type", () => {
  it("two turns through the proxy equal a direct ManagedServer run", async () => {
    const tiny = await tinyModel("qwen2");
    const engine = await startEngine({ model: tiny.gguf, threads: 1, parallel: 1, ctx: 1024 });
    try {
      const config = parseServerConfig({
        base_url: `${engine.url}/v1`,
        server_type: "sglang",
        model_name: "tiny",
        tokenizer_name: TINY_TOKENIZER,
        health_check: false,
      });
      const sampling = { max_tokens: 8, temperature: 1, seed: 3 };
      const first: ChatMessage[] = [{ role: "user", content: "What is 2+3?" }];
      const proxy = createInferenceProxy();
      const tracking = emptyTracking();
      const one = (await proxy.chatCompletion([config], tracking, {
        messages: first,
        ...sampling,
      })) as { choices: { message: { content: string } }[] };
      const second: ChatMessage[] = [
        ...first,
        { role: "assistant", content: one.choices[0]!.message.content },
        { role: "user", content: "And 4+4?" },
      ];
      await proxy.chatCompletion([config], tracking, { messages: second, ...sampling });

      const managed = await new ServerManager([config]).managedServer();
      await managed.chatCompletion({ messages: first, ...sampling });
      await managed.chatCompletion({ messages: second, ...sampling });
      const direct = managed.getState().nodes;
      expect(tracking.nodes).toHaveLength(1);
      expect(tracking.nodes[0]!.tokens).toEqual(direct[0]!.tokens);
      expect(tracking.nodes[0]!.masked_tokens).toEqual(direct[0]!.masked_tokens);
      // Two separate samplings on llama.cpp agree on the ids; their logprobs to float noise.
      const logprobs = tracking.nodes[0]!.logprobs;
      expect(logprobs).toHaveLength(direct[0]!.logprobs.length);
      const drift = Math.max(...logprobs.map((l, i) => Math.abs(l - direct[0]!.logprobs[i]!)));
      expect(drift).toBeLessThanOrEqual(1e-4);
      expect(tracking.nodes[0]!.masked_tokens.filter((m) => m !== -100).length).toBeGreaterThan(0);
    } finally {
      await engine.close();
      await closeLlamaRuntime();
    }
  }, 600_000);
});
