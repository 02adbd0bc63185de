import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type APIServerConfigInput, parseServerConfig } from "../../../src/core/server-config";
import {
  createBackend,
  InferenceHttpError,
} from "../../../src/env-workers/inference/backends/index";
import {
  mergeChoices,
  parseChatResponse,
} from "../../../src/env-workers/inference/backends/openai";
import {
  buildSGLangGenerateRequest,
  parseSGLangGenerateResponse,
} from "../../../src/env-workers/inference/backends/sglang";
import {
  buildTrlGenerateRequest,
  parseTrlGenerateResponse,
} from "../../../src/env-workers/inference/backends/trl";
import {
  buildVllmGenerateRequest,
  buildVllmOpenAIRequest,
  parseVllmGenerateResponse,
  parseVllmOpenAIResponse,
} from "../../../src/env-workers/inference/backends/vllm";
import { getTokenizer } from "../../../src/env-workers/tokenizers/index";
import { type Simulator, startSimulator } from "../../../src/sim/server";

interface Fixture {
  request: Record<string, unknown>;
  response: unknown;
}
const fixture = (name: string): Fixture =>
  JSON.parse(
    readFileSync(new URL(`../../fixtures/inference/${name}.json`, import.meta.url), "utf8"),
  ) as Fixture;

describe("recorded wire examples", () => {
  it("vLLM Atropos /generate: builds the documented request and parses ids from logprob keys", () => {
    const f = fixture("vllm-generate");
    const prompt = (f.request.prompt as { prompt_token_ids: number[] }).prompt_token_ids;
    expect(
      buildVllmGenerateRequest({ inputIds: prompt, n: 2, maxTokens: 3, temperature: 1.0 }),
    ).toEqual(f.request);
    expect(parseVllmGenerateResponse(f.response, prompt)).toEqual({
      promptTokens: prompt,
      outputTokens: [
        [19, 151645],
        [785, 4226, 374],
      ],
      outputLogprobs: [
        [-0.0123, -0.0009],
        [-1.5, -0.75, -0.25],
      ],
      finishReasons: ["stop", "length"],
    });
  });

  it("vLLM OpenAI server: token-id prompt, token_id:<id> tokens, choices ordered by index", () => {
    const f = fixture("vllm-openai-completions");
    const prompt = f.request.prompt as number[];
    expect(
      buildVllmOpenAIRequest(
        { inputIds: prompt, n: 2, maxTokens: 2, temperature: 0.7 },
        "Qwen/Qwen3-0.6B",
      ),
    ).toEqual(f.request);
    const parsed = parseVllmOpenAIResponse(f.response, prompt);
    expect(parsed.outputTokens).toEqual([
      [9707, 0],
      [13048, 151645],
    ]);
    expect(parsed.outputLogprobs).toEqual([
      [-0.12, -0.56],
      [-0.31, -0.02],
    ]);
    expect(parsed.finishReasons).toEqual(["length", "stop"]);
    const bad = structuredClone(f.response) as { choices: { logprobs: { tokens: string[] } }[] };
    bad.choices[0]!.logprobs.tokens = ["Hi", "!"];
    expect(() => parseVllmOpenAIResponse(bad, prompt)).toThrow(/token_id/);
  });

  it("SGLang /generate: input_ids + sampling_params, [lp, id, text] triples, object finish_reason", () => {
    const f = fixture("sglang-generate");
    const ids = f.request.input_ids as number[];
    expect(
      buildSGLangGenerateRequest({ inputIds: ids, n: 2, maxTokens: 2, temperature: 1.0 }),
    ).toEqual(f.request);
    expect(parseSGLangGenerateResponse(f.response, ids)).toEqual({
      promptTokens: ids,
      outputTokens: [
        [13048, 151645],
        [9707, 0],
      ],
      outputLogprobs: [
        [-0.4, -0.01],
        [-0.2, -1.25],
      ],
      finishReasons: ["stop", "length"],
    });
  });

  it("TRL /generate/: Atropos defaults and completion_ids", () => {
    const f = fixture("trl-generate");
    const prompt = (f.request.prompts as string[])[0]!;
    expect(buildTrlGenerateRequest(prompt, { n: 2 })).toEqual(f.request);
    expect(parseTrlGenerateResponse(f.response)).toEqual([
      [13048, 151645],
      [9707, 0],
    ]);
  });

  it("OpenAI chat: tool calls and n choices; merging renumbers indices", () => {
    const parsed = parseChatResponse(fixture("openai-chat").response);
    expect(parsed.choices[0]?.message.tool_calls?.[0]?.function.name).toBe("get_weather");
    expect(parsed.choices[0]?.finish_reason).toBe("tool_calls");
    expect(parsed.choices[1]?.message.content).toBe("It is sunny.");
    expect(mergeChoices([parsed, parsed]).choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
  });

  it("OpenAI backend sends n, detects servers that ignore it and fills the rest", async () => {
    const bodies: Record<string, unknown>[] = [];
    const fakeFetch = async (_url: string, init?: RequestInit) => {
      bodies.push(JSON.parse(String(init?.body)) as Record<string, unknown>);
      return Response.json({
        id: "x",
        model: "m",
        choices: [{ index: 0, text: "t", finish_reason: "stop" }],
      });
    };
    const backend = createBackend({
      config: parseServerConfig({ base_url: "http://127.0.0.1:1/v1", model_name: "m" }),
      fetch: fakeFetch,
      tokenizer: () => getTokenizer("qwen3"),
    });
    const result = await backend.completion({ prompt: "p", n: 3, split: "eval" });
    expect(result.choices).toHaveLength(3);
    expect(bodies[0]).toMatchObject({ model: "m", prompt: "p", n: 3 });
    expect(bodies[0]).not.toHaveProperty("split");
    expect(bodies.slice(1).every((b) => !("n" in b))).toBe(true);
    await backend.completion({ prompt: "p", n: 2 });
    expect(bodies.slice(3).every((b) => !("n" in b))).toBe(true); // remembered: n is ignored
    await expect(backend.generateTokens({ inputIds: [1], n: 1 })).rejects.toThrow(/no token ids/);
  });
});

describe("backends against the simulator over HTTP", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 7, maxTokensDefault: 64 });
  });
  afterAll(() => sim.close());

  const make = (config: Partial<APIServerConfigInput>) =>
    createBackend({
      config: parseServerConfig({
        base_url: `${sim.url}/v1`,
        model_name: "sim-policy",
        tokenizer_name: "qwen3",
        ...config,
      }),
      fetch: (url, init) => fetch(url, init),
      tokenizer: () => getTokenizer("qwen3"),
    });

  it("vllm generate and vllm openai modes return identical tokens for the same prompt ids", async () => {
    const tok = await getTokenizer("qwen3");
    const inputIds = tok.encode(
      tok.applyChatTemplate([{ role: "user", content: "hello" }], { addGenerationPrompt: true }),
    );
    const viaGenerate = await make({ server_type: "vllm" }).generateTokens({
      inputIds,
      n: 3,
      seed: 1,
    });
    const viaOpenAI = await make({ server_type: "vllm", vllm_mode: "openai" }).generateTokens({
      inputIds,
      n: 3,
      seed: 1,
    });
    const viaSGLang = await make({ server_type: "sglang" }).generateTokens({
      inputIds,
      n: 3,
      seed: 1,
    });
    expect(viaGenerate.outputTokens).toHaveLength(3);
    expect(viaOpenAI).toEqual(viaGenerate);
    expect(viaSGLang.outputTokens).toEqual(viaGenerate.outputTokens);
    expect(viaSGLang.outputLogprobs).toEqual(viaGenerate.outputLogprobs);
    for (const ids of viaGenerate.outputTokens) expect(ids.at(-1)).toBe(tok.eosTokenId);
    for (const lps of viaGenerate.outputLogprobs) for (const lp of lps) expect(lp).toBeLessThan(0);
  });

  it("max_tokens truncation reports finish_reason length", async () => {
    const result = await make({ server_type: "sglang" }).generateTokens({
      inputIds: [151644, 872, 198],
      n: 1,
      maxTokens: 2,
    });
    expect(result.outputTokens[0]).toHaveLength(2);
    expect(result.finishReasons).toEqual(["length"]);
  });

  it("trl returns ids without logprobs and says so", async () => {
    const result = await make({ server_type: "trl" }).generateTokens({
      inputIds: [151644, 872, 198],
      n: 2,
    });
    expect(result.logprobsUnavailable).toBe(true);
    expect(result.outputLogprobs).toEqual([[], []]);
    expect(result.outputTokens[0]!.length).toBeGreaterThan(0);
    const chat = await make({ server_type: "trl" }).chatCompletion({
      messages: [{ role: "user", content: "hi" }],
    });
    expect(chat.choices[0]?.message.content).not.toContain("<|im_end|>");
  });

  it("openai chat/completions and health probes", async () => {
    const backend = make({ server_type: "openai" });
    const chat = await backend.chatCompletion({
      messages: [{ role: "user", content: "hi" }],
      n: 2,
    });
    expect(chat.choices).toHaveLength(2);
    expect(typeof chat.choices[0]?.message.content).toBe("string");
    // One token: any answer (at least one token, then EOS) is cut short.
    const text = await backend.completion({ prompt: "Once upon", max_tokens: 1 });
    expect(text.choices[0]?.finish_reason).toBe("length");
    for (const type of ["openai", "vllm", "sglang", "trl"] as const) {
      expect(await make({ server_type: type }).healthCheck()).toBe(true);
    }
  });

  it("4xx answers surface as non-retryable InferenceHttpError", async () => {
    const error = await make({ server_type: "vllm" })
      .generateTokens({ inputIds: [1.5], n: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InferenceHttpError);
    expect((error as InferenceHttpError).status).toBe(400);
    expect((error as InferenceHttpError).retryable).toBe(false);
  });
});
