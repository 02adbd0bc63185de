/**
 * `atropos-edge engine` with a real (tiny, random) model: every server type it speaks gives
 * groups whose tokens, masks and logprobs equal a PyTorch forward pass of the same f32 weights,
 * single- and multi-turn with tool calls; the sampling knobs of the wire formats; weight reloads.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openInference } from "../../src/cli/inference";
import { runProcess } from "../../src/cli/process-command";
import type { ChatMessage } from "../../src/core/wire/group-types";
import type { ServerType } from "../../src/core/wire/server-config";
import { closeLlamaRuntime, type EngineServer, startEngine } from "../../src/engine/index";
import { ServerManager } from "../../src/inference/server-manager";
import {
  logprobErrors,
  maxLogprobError,
  type Sequence,
  stopScorer,
  TINY_TOKENIZER,
  type TinyModel,
  tinyModel,
  trainedTinyModel,
} from "./engine-fixture";

const TOLERANCE = 1e-3; // nats, for random f32 weights (measured: ~1e-5)
let model: TinyModel;
let engine: EngineServer;

beforeAll(async () => {
  model = await tinyModel("qwen2");
  engine = await startEngine({ model: model.gguf, parallel: 4, threads: 1, ctx: 1024 });
}, 600_000);
afterAll(async () => {
  stopScorer();
  await engine?.close();
  await closeLlamaRuntime();
});

/** The fields of a vLLM completions choice the tests read. */
interface Choice {
  text: string;
  finish_reason: string;
  token_ids: number[];
  prompt_token_ids: number[];
  logprobs: { token_logprobs: number[] };
}

// biome-ignore lint/suspicious/noExplicitAny: answers of several routes, each test reads its own fields
type Json = any;

async function post(path: string, body: unknown): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${engine.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text.startsWith("{") || text.startsWith("[") ? JSON.parse(text) : text,
  };
}

const TOKEN_TYPES: ServerType[] = ["vllm", "vllm-generate", "atropos", "sglang", "trl"];

describe("engine: groups through every server type equal PyTorch", () => {
  it("letter_counting groups (process) over vllm, vllm-generate, atropos, sglang, trl", async () => {
    const sequences: Sequence[] = [];
    for (const serverType of TOKEN_TYPES) {
      const out = join(mkdtempSync(join(tmpdir(), `engine-${serverType}-`)), "groups.jsonl");
      const logs: string[] = [];
      const code = await runProcess(
        {
          env: "letter_counting",
          envConfig: { max_token_length: 12, ensure_scores_are_not_same: false },
          groupSize: 2,
          groups: 1,
          out,
          concurrency: 1,
          serverType,
          inferenceUrl: `${engine.url}/v1`,
          model: "tiny",
          tokenizer: TINY_TOKENIZER,
          simLatencyMs: 0,
          simSeed: 0,
        },
        (line) => logs.push(line),
      );
      expect(code, logs.join("\n")).toBe(0);
      const groups = readFileSync(out, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line));
      expect(groups).toHaveLength(1);
      const group = groups[0] as {
        tokens: number[][];
        masks: number[][];
        inference_logprobs: number[][];
      };
      expect(group.tokens, serverType).toHaveLength(2);
      group.tokens.forEach((tokens, i) => {
        sequences.push({ tokens, masks: group.masks[i]!, logprobs: group.inference_logprobs[i]! });
      });
    }
    expect(await maxLogprobError(model, sequences)).toBeLessThanOrEqual(TOLERANCE);
  });

  it("multi-turn chats with tool calls: each turn extends the last, exact on vllm and atropos", async () => {
    const tools = [
      {
        type: "function" as const,
        function: {
          name: "add",
          description: "adds",
          parameters: { type: "object", properties: {} },
        },
      },
    ];
    const first: ChatMessage[] = [
      { role: "system", content: "You add numbers." },
      { role: "user", content: "What is 2+3?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_0", type: "function", function: { name: "add", arguments: '{"a":2,"b":3}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_0", content: "5" },
    ];
    const sequences: Sequence[] = [];
    for (const serverType of ["vllm", "atropos"] as const) {
      const manager = new ServerManager([
        {
          base_url: `${engine.url}/v1`,
          server_type: serverType,
          model_name: "tiny",
          tokenizer_name: TINY_TOKENIZER,
        },
      ]);
      const managed = await manager.managedServer();
      const one = await managed.chatCompletion({
        messages: first,
        tools,
        max_tokens: 10,
        seed: 5,
        temperature: 1,
      });
      const reply = one.choices[0]!.message.content ?? "";
      await managed.chatCompletion({
        messages: [
          ...first,
          { role: "assistant", content: reply },
          { role: "user", content: "And 4+4?" },
        ],
        tools,
        n: 2,
        max_tokens: 10,
        seed: 6,
        temperature: 1,
      });
      const { nodes } = managed.getState();
      expect(nodes.length, serverType).toBe(2);
      for (const node of nodes) {
        // the second turn extended the first: its first trainable tokens are the first reply's
        const firstReply = node.masked_tokens.findIndex((m) => m !== -100);
        expect(firstReply).toBeGreaterThan(0);
        expect(node.masked_tokens.filter((m) => m !== -100).length).toBeGreaterThan(10);
        sequences.push({ tokens: node.tokens, masks: node.masked_tokens, logprobs: node.logprobs });
      }
    }
    expect(await maxLogprobError(model, sequences)).toBeLessThanOrEqual(TOLERANCE);
  });
});

describe("engine: trained weights", () => {
  it("a briefly trained model: median ≤ 1e-4 and p99 ≤ 5e-3 nats from PyTorch", async () => {
    const trained = await trainedTinyModel();
    const server = await startEngine({ model: trained.gguf, parallel: 4, threads: 1, ctx: 256 });
    try {
      const prompt = [1, 67, 85, 85, 75, 201, 1, 81];
      const response = await fetch(`${server.url}/v1/completions`, {
        method: "POST",
        body: JSON.stringify({
          prompt,
          n: 8,
          max_tokens: 24,
          seed: 9,
          logprobs: 0,
          return_token_ids: true,
        }),
      });
      const { choices } = (await response.json()) as { choices: Choice[] };
      const errors = await logprobErrors(
        trained,
        choices.map((c) => ({
          tokens: [...prompt, ...c.token_ids],
          masks: [...prompt.map(() => -100), ...c.token_ids],
          logprobs: [...prompt.map(() => 1), ...c.logprobs.token_logprobs],
        })),
      );
      const sorted = [...errors].sort((a, b) => a - b);
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
      expect(sorted.length).toBeGreaterThan(50);
      expect(at(0.5)).toBeLessThanOrEqual(1e-4);
      expect(at(0.99)).toBeLessThanOrEqual(5e-3);
      // the weights did move: the base model gives the same tokens other logprobs
      const base = await post("/v1/completions", {
        prompt: [...prompt, ...choices[0]!.token_ids],
        max_tokens: 1,
        seed: 1,
        logprobs: 0,
        return_token_ids: true,
      });
      expect(base.status).toBe(200);
      const baseErrors = await logprobErrors(trained, [
        {
          tokens: [...prompt, ...choices[0]!.token_ids, ...base.body.choices[0].token_ids],
          masks: [
            ...prompt.map(() => -100),
            ...choices[0]!.token_ids.map(() => -100),
            ...base.body.choices[0].token_ids,
          ],
          logprobs: [
            ...prompt.map(() => 1),
            ...choices[0]!.token_ids.map(() => 1),
            ...base.body.choices[0].logprobs.token_logprobs,
          ],
        },
      ]);
      expect(baseErrors[0]).toBeGreaterThan(0.01);
    } finally {
      await server.close();
    }
  });
});

describe("engine convert: each architecture it states", () => {
  it("Qwen3 (q/k norms) and Llama (Q/K rows permuted) GGUFs equal PyTorch", async () => {
    for (const arch of ["qwen3", "llama"] as const) {
      const tiny = await tinyModel(arch);
      const server = await startEngine({ model: tiny.gguf, parallel: 2, threads: 1, ctx: 256 });
      try {
        const prompt = [1, 67, 85, 85, 75, 201, 1, 81];
        const response = await fetch(`${server.url}/v1/completions`, {
          method: "POST",
          body: JSON.stringify({
            prompt,
            n: 2,
            max_tokens: 16,
            seed: 4,
            logprobs: 0,
            return_token_ids: true,
          }),
        });
        const { choices } = (await response.json()) as { choices: Choice[] };
        const sequences = choices.map((c) => ({
          tokens: [...prompt, ...c.token_ids],
          masks: [...prompt.map(() => -100), ...c.token_ids],
          logprobs: [...prompt.map(() => 1), ...c.logprobs.token_logprobs],
        }));
        expect(await maxLogprobError(tiny, sequences), arch).toBeLessThanOrEqual(TOLERANCE);
      } finally {
        await server.close();
      }
    }
  });
});

describe("--engine FILE.gguf on the env commands (process, start)", () => {
  it("runs the envs on the model; a GGUF of another vocabulary is refused with both sizes", async () => {
    const flags = {
      serverType: "vllm",
      model: "tiny",
      simLatencyMs: 0,
      simSeed: 0,
      engine: model.gguf,
    };
    await expect(openInference({ ...flags, tokenizer: "qwen3" })).rejects.toThrow(
      /has a vocabulary of 400 tokens but the run's tokenizer qwen3 has 151669/,
    );
    const out = join(mkdtempSync(join(tmpdir(), "engine-process-")), "groups.jsonl");
    const logs: string[] = [];
    const code = await runProcess(
      {
        ...flags,
        tokenizer: TINY_TOKENIZER,
        env: "letter_counting",
        envConfig: { max_token_length: 8, ensure_scores_are_not_same: false },
        groupSize: 2,
        groups: 1,
        out,
        concurrency: 1,
      },
      (line) => logs.push(line),
    );
    expect(code, logs.join("\n")).toBe(0);
    expect(logs.join("\n")).toMatch(
      /llama\.cpp engine \(.*qwen2-0\.gguf\) at http:\/\/127\.0\.0\.1:\d+, spoken to as vllm/,
    );
    const group = JSON.parse(readFileSync(out, "utf8").trim()) as {
      tokens: number[][];
      masks: number[][];
      inference_logprobs: number[][];
    };
    const sequences = group.tokens.map((tokens, i) => ({
      tokens,
      masks: group.masks[i]!,
      logprobs: group.inference_logprobs[i]!,
    }));
    expect(await maxLogprobError(model, sequences)).toBeLessThanOrEqual(TOLERANCE);
  });
});

describe("engine: the wire formats' sampling knobs", () => {
  const prompt = [1, 67, 85, 85, 75, 201, 1, 81, 85];

  it("n, seed, max_tokens, stop strings and end-of-sequence as vLLM answers them", async () => {
    const ask = (extra: Record<string, unknown>) =>
      post("/v1/completions", {
        prompt,
        max_tokens: 40,
        logprobs: 0,
        return_token_ids: true,
        ...extra,
      });
    const a = await ask({ n: 12, seed: 7 });
    expect(a.status).toBe(200);
    expect(a.body.choices).toHaveLength(12);
    const again = await ask({ n: 12, seed: 7 });
    expect(again.body.choices.map((c: Choice) => c.token_ids)).toEqual(
      a.body.choices.map((c: Choice) => c.token_ids),
    );
    const other = await ask({ n: 12, seed: 8 });
    expect(other.body.choices.map((c: Choice) => c.token_ids)).not.toEqual(
      a.body.choices.map((c: Choice) => c.token_ids),
    );
    const eos = engine.model.tokenizer.stopTokenIds;
    const stopped = a.body.choices.filter((c: Choice) => c.finish_reason === "stop");
    expect(stopped.length).toBeGreaterThan(0); // a random model ends often enough in 12 × 40
    for (const c of a.body.choices) {
      expect(c.prompt_token_ids).toEqual(prompt);
      expect(c.logprobs.token_logprobs).toHaveLength(c.token_ids.length);
      if (c.finish_reason === "stop")
        expect(eos).toContain(c.token_ids.at(-1)); // EOS included
      else expect(c.token_ids).toHaveLength(40);
    }
    // a stop string: the text ends before it, the ids end with the token that completed it
    const long = a.body.choices.find((c: Choice) => c.text.length > 8);
    const index = a.body.choices.indexOf(long);
    const stop = long.text.slice(4, 6);
    const cut = await ask({ n: 12, seed: 7, stop: [stop] });
    const choice = cut.body.choices[index];
    expect(choice.finish_reason).toBe("stop");
    expect(choice.text).toBe(long.text.slice(0, long.text.indexOf(stop)));
    expect(long.token_ids.slice(0, choice.token_ids.length)).toEqual(choice.token_ids);
    expect(choice.token_ids.length).toBeLessThan(long.token_ids.length);
    const short = await ask({ n: 1, seed: 7, max_tokens: 3 });
    expect(short.body.choices[0].token_ids).toHaveLength(3);
    expect(short.body.choices[0].finish_reason).toBe("length");
  });

  it("top_k 1 is greedy; /tokenize, /v1/models and /health describe the model", async () => {
    const greedy = await post("/v1/completions", {
      prompt,
      max_tokens: 8,
      top_k: 1,
      seed: 1,
      return_token_ids: true,
      n: 2,
    });
    const [x, y] = greedy.body.choices;
    expect(x.token_ids).toEqual(y.token_ids);
    const tokens = await post("/tokenize", { prompt: "hello world" });
    expect(tokens.body.count).toBe(tokens.body.tokens.length);
    const detok = await post("/detokenize", { tokens: tokens.body.tokens });
    expect(detok.body.prompt).toBe("hello world");
    const health = await (await fetch(`${engine.url}/health`)).json();
    expect(health).toMatchObject({ status: "ok", vocab_size: 400 });
    const bad = await post("/v1/completions", { prompt, max_tokens: 2000 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/exceeds the engine's context of 1024 tokens/);
  });
});

describe("engine: SGLang weight routes", () => {
  it("update_weights_from_disk serves the new weights exactly; bad files change nothing", async () => {
    const next = await tinyModel("qwen2", 1);
    const missing = await post("/update_weights_from_disk", {
      model_path: join(tmpdir(), "none.gguf"),
    });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/no such file/);
    const prompt = [1, 67, 85, 85, 75, 201];
    const ask = () =>
      post("/v1/completions", {
        prompt,
        max_tokens: 8,
        seed: 3,
        logprobs: 0,
        return_token_ids: true,
      });
    const before = (await ask()).body.choices[0];
    const loaded = await post("/update_weights_from_disk", {
      model_path: next.gguf,
      weight_version: 7,
    });
    expect(loaded.body).toMatchObject({ success: true, weight_version: "7" });
    expect((await post("/flush_cache", {})).body).toBe("Cache flushed.");
    const after = (await ask()).body.choices[0];
    expect(after.logprobs.token_logprobs).not.toEqual(before.logprobs.token_logprobs);
    const seq = (c: Choice): Sequence => ({
      tokens: [...prompt, ...c.token_ids],
      masks: [...prompt.map(() => -100), ...c.token_ids],
      logprobs: [...prompt.map(() => 1), ...c.logprobs.token_logprobs],
    });
    expect(await maxLogprobError(next, [seq(after)])).toBeLessThanOrEqual(TOLERANCE);
    await post("/update_weights_from_disk", { model_path: model.gguf, weight_version: 8 });
    expect(await maxLogprobError(model, [seq((await ask()).body.choices[0])])).toBeLessThanOrEqual(
      TOLERANCE,
    );
  });
});
