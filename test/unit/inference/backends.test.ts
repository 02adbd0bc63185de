import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type APIServerConfigInput,
  parseServerConfig,
  SERVER_TYPES,
  type ServerType,
} from "../../../src/core/wire/server-config";
import {
  buildAtroposGenerateRequest,
  parseAtroposGenerateResponse,
} from "../../../src/inference/backends/atropos";
import type { FetchLike } from "../../../src/inference/backends/http";
import { errorMessageOf, isMissingRoute } from "../../../src/inference/backends/http";
import {
  createBackend,
  InferenceHttpError,
  InferenceMismatchError,
  InferenceProtocolError,
  isRetryableError,
} from "../../../src/inference/backends/index";
import {
  mergeChoices,
  parseChatResponse,
  parseCompletionResponse,
} from "../../../src/inference/backends/openai";
import { resolveSampling, SAMPLING_DEFAULTS } from "../../../src/inference/backends/sampling";
import {
  buildSGLangGenerateRequest,
  parseSGLangGenerateResponse,
} from "../../../src/inference/backends/sglang";
import {
  buildTrlGenerateRequest,
  parseTrlGenerateResponse,
} from "../../../src/inference/backends/trl";
import {
  buildVllmChatTokensRequest,
  buildVllmCompletionsRequest,
  buildVllmTokensGenerateRequest,
  parseVllmChatTokensResponse,
  parseVllmCompletionsResponse,
  parseVllmTokensGenerateResponse,
} from "../../../src/inference/backends/vllm";
import { getTokenizer } from "../../../src/inference/tokenizers/index";
import { type Simulator, startSimulator } from "../../../src/sim/server";

interface Fixture {
  _source: string[];
  request: Record<string, unknown>;
  response: unknown;
  expected: Record<string, unknown>;
  refusal?: { status: number; body: unknown };
}
const fixture = (name: string): Fixture =>
  JSON.parse(
    readFileSync(new URL(`../../fixtures/inference/${name}.json`, import.meta.url), "utf8"),
  ) as Fixture;

/** The parsed result a fixture's `expected` describes (contents are checked separately). */
const tokensOf = (f: Fixture) => {
  const { contents: _contents, ...tokens } = f.expected;
  return tokens;
};

const PROMPT = [151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198];
const MODEL = "Qwen/Qwen3-0.6B";

/** A fetch that records each request and answers from a list (the last answer repeats). */
function scripted(answers: { status?: number; body: unknown }[]) {
  const calls: { url: string; body: Record<string, unknown> }[] = [];
  const fetchFn: FetchLike = async (url, init) => {
    calls.push({ url, body: JSON.parse(String(init?.body ?? "null")) as Record<string, unknown> });
    const answer = answers[Math.min(calls.length - 1, answers.length - 1)]!;
    const text = typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body);
    return new Response(text, { status: answer.status ?? 200 });
  };
  return { calls, fetch: fetchFn };
}

function backendFor(
  type: ServerType,
  fetchFn: FetchLike,
  config: Partial<APIServerConfigInput> = {},
) {
  return createBackend({
    config: parseServerConfig({
      base_url: "http://gpu:8000/v1",
      server_type: type,
      model_name: MODEL,
      tokenizer_name: "qwen3",
      ...config,
    }),
    fetch: fetchFn,
    tokenizer: () => getTokenizer("qwen3"),
  });
}

describe("every fixture cites where its shape comes from", () => {
  for (const name of [
    "vllm-completions-token-ids",
    "vllm-completions-token-id-strings",
    "vllm-chat-token-ids",
    "vllm-inference-generate",
    "atropos-generate",
    "sglang-generate",
    "trl-generate",
    "trl-generate-text-prompts",
    "openai-completions",
    "errors",
  ]) {
    it(name, () => {
      const sources = fixture(name)._source;
      expect(Array.isArray(sources) && sources.length > 0).toBe(true);
      expect(sources.join(" ")).toMatch(/github\.com|docs\.|platform\.openai|\.py/);
    });
  }
});

describe("vLLM (stock `vllm serve`), --server-type vllm", () => {
  it("/v1/completions with return_token_ids (≥ 0.10.2): the request we send and the ids we read", async () => {
    const f = fixture("vllm-completions-token-ids");
    expect(
      buildVllmCompletionsRequest(
        { inputIds: PROMPT, n: 2, maxTokens: 8, temperature: 0.7, seed: 1234 },
        MODEL,
      ),
    ).toEqual(f.request);
    expect(parseVllmCompletionsResponse(f.response, PROMPT)).toEqual(f.expected);
    // Through the backend: the same body goes to <base>/completions.
    const { calls, fetch } = scripted([{ body: f.response }]);
    const result = await backendFor("vllm", fetch).generateTokens({
      inputIds: PROMPT,
      n: 2,
      maxTokens: 8,
      temperature: 0.7,
      seed: 1234,
    });
    expect(calls[0]?.url).toBe("http://gpu:8000/v1/completions");
    expect(calls[0]?.body).toEqual(f.request);
    expect(result).toEqual(f.expected);
  });

  it("older vLLM: ids from the token_id:<id> logprob tokens", () => {
    const f = fixture("vllm-completions-token-id-strings");
    expect(
      buildVllmCompletionsRequest(
        { inputIds: PROMPT, n: 2, maxTokens: 2, temperature: 0.7 },
        MODEL,
      ),
    ).toEqual(f.request);
    expect(parseVllmCompletionsResponse(f.response, PROMPT)).toEqual(f.expected);
  });

  it("refuses answers it cannot trust: no ids at all, ids that disagree, a changed prompt, -9999", () => {
    const f = fixture("vllm-completions-token-ids");
    type Choice = {
      token_ids?: number[];
      prompt_token_ids?: number[];
      logprobs: { tokens: string[]; token_logprobs: number[] };
    };
    const mutate = (change: (choice: Choice) => void) => {
      const copy = structuredClone(f.response) as { choices: Choice[] };
      change(copy.choices[0]!);
      return copy;
    };
    const noIds = mutate((c) => {
      delete c.token_ids;
      c.logprobs.tokens = ["Hi", "<|im_end|>"];
    });
    const error = (() => {
      try {
        parseVllmCompletionsResponse(noIds, PROMPT);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InferenceMismatchError);
    expect(isRetryableError(error)).toBe(false);
    expect(String(error)).toMatch(/--server-type sglang/);
    expect(() =>
      parseVllmCompletionsResponse(
        mutate((c) => {
          c.token_ids = [1, 2];
        }),
        PROMPT,
      ),
    ).toThrow(/disagree/);
    expect(() =>
      parseVllmCompletionsResponse(
        mutate((c) => {
          c.prompt_token_ids = [1, ...PROMPT];
        }),
        PROMPT,
      ),
    ).toThrow(/changed the prompt/);
    expect(() =>
      parseVllmCompletionsResponse(
        mutate((c) => {
          c.logprobs.token_logprobs = [-9999.0, -0.1];
        }),
        PROMPT,
      ),
    ).toThrow(InferenceProtocolError);
  });

  it("/v1/chat/completions with return_token_ids: the server's template, its prompt ids", async () => {
    const f = fixture("vllm-chat-token-ids");
    const params = { messages: [{ role: "user" as const, content: "hi" }], n: 2, max_tokens: 8 };
    expect(buildVllmChatTokensRequest(params, MODEL)).toEqual(f.request);
    const parsed = parseVllmChatTokensResponse(f.response);
    expect(parsed.tokens).toEqual(tokensOf(f));
    expect(parsed.chat.choices.map((c) => c.message.content)).toEqual(f.expected.contents);
    const { calls, fetch } = scripted([{ body: f.response }]);
    const backend = backendFor("vllm", fetch);
    const viaBackend = await backend.chatCompletionWithTokens!({ ...params, split: "eval" });
    expect(calls[0]?.url).toBe("http://gpu:8000/v1/chat/completions");
    expect(calls[0]?.body).toEqual(f.request);
    expect(viaBackend.tokens).toEqual(tokensOf(f));
    const old = structuredClone(f.response) as Record<string, unknown>;
    delete old.prompt_token_ids;
    expect(() => parseVllmChatTokensResponse(old)).toThrow(/0\.10\.2/);
  });

  it("text calls send every sampling value (vLLM would apply generation_config.json)", async () => {
    const { calls, fetch } = scripted([
      { body: { choices: [{ index: 0, message: { content: "x" }, finish_reason: "stop" }] } },
    ]);
    await backendFor("vllm", fetch).chatCompletion({ messages: [{ role: "user", content: "q" }] });
    expect(calls[0]?.body).toMatchObject({
      max_tokens: SAMPLING_DEFAULTS.max_tokens,
      temperature: 1,
      top_p: 1,
      top_k: -1,
      min_p: 0,
      repetition_penalty: 1,
    });
  });
});

describe("vLLM /inference/v1/generate, --server-type vllm-generate", () => {
  it("token_ids + sampling_params in; choices' token_ids and token_id:<id> logprobs out", async () => {
    const f = fixture("vllm-inference-generate");
    const request = { inputIds: PROMPT, n: 2, maxTokens: 3, temperature: 1.0, stop: ["</answer>"] };
    expect(buildVllmTokensGenerateRequest(request, MODEL)).toEqual(f.request);
    expect(parseVllmTokensGenerateResponse(f.response, PROMPT)).toEqual(f.expected);
    const { calls, fetch } = scripted([{ body: f.response }]);
    expect(await backendFor("vllm-generate", fetch).generateTokens(request)).toEqual(f.expected);
    expect(calls[0]?.url).toBe("http://gpu:8000/inference/v1/generate"); // root, not under /v1
  });

  it("also reads the integer logprob items proposed in vllm#58181", () => {
    const f = fixture("vllm-inference-generate");
    const response = structuredClone(f.response) as {
      choices: { logprobs: { content: Record<string, unknown>[] } }[];
    };
    for (const choice of response.choices) {
      choice.logprobs.content = choice.logprobs.content.map((item) => ({
        token_id: Number(String(item.token).slice("token_id:".length)),
        logprob: item.logprob,
        rank: 1,
        top_logprobs: [],
      }));
    }
    expect(parseVllmTokensGenerateResponse(response, PROMPT)).toEqual(f.expected);
  });
});

describe("Atropos' vllm_api_server.py, --server-type atropos", () => {
  it("/generate: the documented request; ids from the logprob keys", () => {
    const f = fixture("atropos-generate");
    expect(
      buildAtroposGenerateRequest({ inputIds: promptOf(f), n: 2, maxTokens: 3, temperature: 1.0 }),
    ).toEqual(f.request);
    expect(parseAtroposGenerateResponse(f.response, promptOf(f))).toEqual({
      promptTokens: promptOf(f),
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

  it("text calls go through /generate too (the server has no OpenAI routes)", async () => {
    const f = fixture("atropos-generate");
    const { calls, fetch } = scripted([{ body: f.response }]);
    const chat = await backendFor("atropos", fetch).chatCompletion({
      messages: [{ role: "user", content: "What is 2+2?" }],
      n: 2,
      max_tokens: 3,
    });
    expect(calls[0]?.url).toBe("http://gpu:8000/generate");
    expect(calls[0]?.body).toEqual(f.request);
    expect(chat.choices.map((c) => c.finish_reason)).toEqual(["stop", "length"]);
    expect(chat.choices[0]?.message.content).toBe("4");
  });
});

function promptOf(f: Fixture): number[] {
  return (f.request.prompt as { prompt_token_ids: number[] }).prompt_token_ids;
}

describe("SGLang, --server-type sglang", () => {
  it("/generate: input_ids and SGLang's sampling names in; output_ids + [lp, id, text] out", () => {
    const f = fixture("sglang-generate");
    expect(
      buildSGLangGenerateRequest({
        inputIds: PROMPT,
        n: 2,
        maxTokens: 2,
        temperature: 1.0,
        seed: 7,
      }),
    ).toEqual(f.request);
    expect(parseSGLangGenerateResponse(f.response, PROMPT)).toEqual(f.expected);
  });

  it("older SGLang without output_ids: ids from the tuples; disagreeing ids are refused", () => {
    const f = fixture("sglang-generate");
    const items = structuredClone(f.response) as { output_ids?: number[] }[];
    for (const item of items) delete item.output_ids;
    expect(parseSGLangGenerateResponse(items, PROMPT)).toEqual(f.expected);
    items[0]!.output_ids = [1, 2];
    expect(() => parseSGLangGenerateResponse(items, PROMPT)).toThrow(/disagree/);
  });
});

describe("TRL `trl vllm-serve`, --server-type trl", () => {
  it("trl ≥ 1.0: a token-id prompt and logprobs: 0 in; the sampled id's logprob out", async () => {
    const f = fixture("trl-generate");
    const request = { inputIds: PROMPT, n: 2, maxTokens: 3, seed: 42 };
    expect(buildTrlGenerateRequest([PROMPT], resolveSampling(request))).toEqual(f.request);
    expect(parseTrlGenerateResponse(f.response, PROMPT, 3)).toEqual(f.expected);
    let tokenizerLoads = 0;
    const { calls, fetch } = scripted([{ body: f.response }]);
    const backend = createBackend({
      config: parseServerConfig({ base_url: "http://gpu:8000", server_type: "trl" }),
      fetch,
      tokenizer: () => {
        tokenizerLoads++;
        return getTokenizer("qwen3");
      },
    });
    expect(await backend.generateTokens(request)).toEqual(f.expected);
    expect(calls[0]?.url).toBe("http://gpu:8000/generate/");
    expect(calls[0]?.body).toEqual(f.request);
    expect(tokenizerLoads).toBe(0); // token in, token out: no tokenizer needed
  });

  it("logprobs sorted by rank (logprobs > 0): the sampled id is looked up", () => {
    const f = fixture("trl-generate");
    const response = structuredClone(f.response) as {
      logprobs: number[][][];
      logprob_token_ids: number[][][];
    };
    response.logprobs[0]![0] = [-0.1, -0.4];
    response.logprob_token_ids[0]![0] = [77, 13048];
    expect(parseTrlGenerateResponse(response, PROMPT, 3).outputLogprobs[0]).toEqual([-0.4, -0.01]);
    response.logprob_token_ids[0]![0] = [77, 78];
    expect(() => parseTrlGenerateResponse(response, PROMPT, 3)).toThrow(/missing/);
  });

  it("trl < 1.0: after its 422 the decoded prompt is sent and the returned prompt_ids checked", async () => {
    const f = fixture("trl-generate-text-prompts");
    const { calls, fetch } = scripted([f.refusal!, { body: f.response }, { body: f.response }]);
    const backend = backendFor("trl", fetch, { base_url: "http://gpu:8000" });
    expect(await backend.generateTokens({ inputIds: PROMPT, n: 1, maxTokens: 4 })).toEqual(
      f.expected,
    );
    expect(calls[0]?.body.prompts).toEqual([PROMPT]);
    expect(calls[1]?.body).toEqual(f.request);
    // Remembered: the next call sends text at once.
    await backend.generateTokens({ inputIds: PROMPT, n: 1, maxTokens: 4 });
    expect(calls).toHaveLength(3);
    expect(calls[2]?.body.prompts).toEqual(f.request.prompts);
    // A server that re-tokenized differently is refused, and TRL < 0.23 gives no logprobs.
    expect(() => parseTrlGenerateResponse(f.response, [1, ...PROMPT], 4)).toThrow(/trl>=1.0/);
    const old = { completion_ids: [[13048, 151645]] };
    expect(parseTrlGenerateResponse(old, PROMPT, 4)).toMatchObject({
      logprobsUnavailable: true,
      outputLogprobs: [[]],
    });
  });
});

describe("any OpenAI-compatible API, --server-type openai (not token-exact)", () => {
  it("chat: the request sent, tool calls and n choices parsed; merging renumbers", async () => {
    const f = fixture("openai-chat");
    const parsed = parseChatResponse(f.response);
    expect(parsed.choices[0]?.message.tool_calls?.[0]?.function.name).toBe("get_weather");
    expect(parsed.choices[0]?.finish_reason).toBe("tool_calls");
    expect(parsed.choices[1]?.message.content).toBe("It is sunny.");
    expect(mergeChoices([parsed, parsed]).choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    const { calls, fetch } = scripted([{ body: f.response }]);
    await backendFor("openai", fetch, { model_name: "gpt-4o-mini" }).chatCompletion({
      ...(f.request as { messages: [] }),
      split: "train",
    });
    expect(calls[0]?.body).toEqual(f.request); // nothing the provider might reject is added
  });

  it("completions: max_tokens always sent (the legacy API defaults it to 16)", async () => {
    const f = fixture("openai-completions");
    const { calls, fetch } = scripted([{ body: f.response }]);
    const result = await backendFor("openai", fetch, {
      model_name: "gpt-3.5-turbo-instruct",
    }).completion({ prompt: "Say hi", temperature: 0.2 });
    expect(calls[0]?.body).toEqual(f.request);
    expect(result.choices[0]?.text).toBe(parseCompletionResponse(f.response).choices[0]?.text);
  });

  it("sends n, detects servers that ignore it and fills the rest; no token ids", async () => {
    const { calls, fetch } = scripted([
      { body: { id: "x", model: "m", choices: [{ index: 0, text: "t", finish_reason: "stop" }] } },
    ]);
    const backend = backendFor("openai", fetch, { model_name: "m" });
    const result = await backend.completion({ prompt: "p", n: 3, split: "eval" });
    expect(result.choices).toHaveLength(3);
    expect(calls[0]?.body).toMatchObject({ model: "m", prompt: "p", n: 3 });
    expect(calls[0]?.body).not.toHaveProperty("split");
    expect(calls.slice(1).every((c) => !("n" in c.body))).toBe(true);
    await backend.completion({ prompt: "p", n: 2 });
    expect(calls.slice(3).every((c) => !("n" in c.body))).toBe(true); // remembered
    await expect(backend.generateTokens({ inputIds: [1], n: 1 })).rejects.toThrow(
      /not token-exact/,
    );
  });
});

describe("every sampling value is sent, in each server's own names", () => {
  const bare = { inputIds: PROMPT, n: 1 };
  it("defaults fill what the caller left out; extra top_k/min_p/… are renamed, not duplicated", () => {
    const vllm = {
      max_tokens: 1024,
      temperature: 1,
      top_p: 1,
      top_k: -1,
      min_p: 0,
      repetition_penalty: 1,
    };
    expect(buildVllmCompletionsRequest(bare, MODEL)).toMatchObject(vllm);
    expect(buildVllmTokensGenerateRequest(bare, MODEL).sampling_params as object).toMatchObject(
      vllm,
    );
    expect(buildAtroposGenerateRequest(bare)).toMatchObject(vllm);
    expect(buildSGLangGenerateRequest(bare).sampling_params).toEqual({
      n: 1,
      max_new_tokens: 1024,
      temperature: 1,
      top_p: 1,
      top_k: -1,
      min_p: 0,
      repetition_penalty: 1,
    });
    expect(buildTrlGenerateRequest([PROMPT], resolveSampling(bare))).toMatchObject({
      ...vllm,
      logprobs: 0,
    });
    const custom = {
      ...bare,
      extra: { top_k: 20, min_p: 0.05, presence_penalty: 0.5, seed: 3, stop: "END" },
    };
    expect(buildSGLangGenerateRequest(custom).sampling_params).toMatchObject({
      top_k: 20,
      min_p: 0.05,
      presence_penalty: 0.5,
      sampling_seed: 3,
      stop: ["END"],
    });
    expect(buildSGLangGenerateRequest(custom).sampling_params).not.toHaveProperty("seed");
    expect(buildTrlGenerateRequest([PROMPT], resolveSampling(custom))).toMatchObject({
      top_k: 20,
      generation_kwargs: { presence_penalty: 0.5, seed: 3, stop: ["END"] },
    });
  });
});

describe("error bodies and 404s", () => {
  const cases = (
    fixture("errors") as unknown as {
      cases: {
        name: string;
        status: number;
        body: unknown;
        message: string;
        missingRoute: boolean;
      }[];
    }
  ).cases;
  for (const c of cases) {
    it(`reads ${c.name}`, () => {
      const text = typeof c.body === "string" ? c.body : JSON.stringify(c.body);
      expect(errorMessageOf(text)).toBe(c.message);
      if (c.status === 404) expect(isMissingRoute(text)).toBe(c.missingRoute);
      const error = new InferenceHttpError(c.status, "http://gpu/x", text);
      expect(error.message).toContain(c.message);
    });
  }

  it("a missing route says which --server-type to use; a missing model says check --model", async () => {
    const expectations: Record<ServerType, RegExp> = {
      vllm: /This is not stock `vllm serve`.*atropos for Atropos/,
      "vllm-generate": /--server-type vllm \(its \/v1\/completions\)/,
      atropos: /not Atropos' .*--server-type vllm for stock/,
      sglang: /not SGLang/,
      trl: /not `trl vllm-serve`/,
      openai: /check that it is the API root/,
    };
    for (const type of SERVER_TYPES) {
      const { fetch } = scripted([{ status: 404, body: { detail: "Not Found" } }]);
      const error = await backendFor(type, fetch)
        .generateTokens({ inputIds: PROMPT, n: 1 })
        .catch((e: unknown) => e);
      if (type === "openai") {
        const text = await backendFor(type, fetch)
          .chatCompletion({ messages: [{ role: "user", content: "x" }] })
          .catch((e: unknown) => e);
        expect(String(text)).toMatch(expectations[type]);
        continue;
      }
      expect(error, type).toBeInstanceOf(InferenceHttpError);
      expect((error as Error).message, type).toMatch(expectations[type]);
      expect((error as InferenceHttpError).retryable).toBe(false);
    }
    const model = fixture("errors") as unknown as { cases: { body: unknown }[] };
    const { fetch } = scripted([{ status: 404, body: model.cases[2]!.body }]);
    const error = await backendFor("vllm", fetch)
      .generateTokens({ inputIds: PROMPT, n: 1 })
      .catch((e: unknown) => e);
    expect(String(error)).toMatch(/does not exist\. Check --model/);
    expect(String(error)).not.toMatch(/--server-type/);
  });
});

describe("server_type values", () => {
  it("old configs with vllm_mode still parse to the same server", () => {
    expect(parseServerConfig({ server_type: "vllm", vllm_mode: "generate" }).server_type).toBe(
      "atropos",
    );
    expect(parseServerConfig({ server_type: "vllm", vllm_mode: "openai" }).server_type).toBe(
      "vllm",
    );
    const once = parseServerConfig({ server_type: "vllm", vllm_mode: "generate" });
    expect(parseServerConfig(once)).toEqual(once);
    expect(() => parseServerConfig({ server_type: "vllm-openai" as ServerType })).toThrow();
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

  it("every token-exact server type returns the same tokens and logprobs for the same prompt ids", async () => {
    const tok = await getTokenizer("qwen3");
    const inputIds = tok.encode(
      tok.applyChatTemplate([{ role: "user", content: "hello" }], { addGenerationPrompt: true }),
    );
    const before = sim.stats().byRoute;
    const results = [];
    for (const type of ["vllm", "vllm-generate", "atropos", "sglang", "trl"] as const) {
      const result = await make({ server_type: type }).generateTokens({
        inputIds,
        n: 3,
        seed: 1,
        maxTokens: 64,
      });
      expect(result.outputTokens, type).toHaveLength(3);
      expect(result.logprobsUnavailable, type).toBeUndefined();
      results.push(result);
    }
    const [first, ...rest] = results;
    for (const other of rest) {
      expect(other.outputTokens).toEqual(first!.outputTokens);
      expect(other.outputLogprobs).toEqual(first!.outputLogprobs);
      expect(other.finishReasons).toEqual(first!.finishReasons);
    }
    for (const ids of first!.outputTokens) expect(ids.at(-1)).toBe(tok.eosTokenId);
    for (const lps of first!.outputLogprobs) for (const lp of lps) expect(lp).toBeLessThan(0);
    const after = sim.stats().byRoute;
    for (const route of [
      "POST /v1/completions",
      "POST /inference/v1/generate",
      "POST /generate",
      "POST /generate/",
    ]) {
      expect((after[route] ?? 0) - (before[route] ?? 0), route).toBeGreaterThan(0);
    }
  });

  it("vllm chat with token ids: the server's prompt ids are the template's", async () => {
    const tok = await getTokenizer("qwen3");
    const messages = [{ role: "user" as const, content: "hello" }];
    const backend = make({ server_type: "vllm" });
    const { chat, tokens } = await backend.chatCompletionWithTokens!({ messages, n: 2, seed: 3 });
    expect(tokens.promptTokens).toEqual(
      tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: true })),
    );
    expect(tokens.outputTokens).toHaveLength(2);
    expect(chat.choices[0]?.message.content).toBe(
      tok.decode(tokens.outputTokens[0]!.slice(0, -1), { skipSpecialTokens: true }),
    );
  });

  it("max_tokens truncation reports finish_reason length on every token route", async () => {
    for (const type of ["vllm", "vllm-generate", "atropos", "sglang", "trl"] as const) {
      const result = await make({ server_type: type }).generateTokens({
        inputIds: [151644, 872, 198],
        n: 1,
        maxTokens: 2,
      });
      expect(result.outputTokens[0], type).toHaveLength(2);
      expect(result.finishReasons, type).toEqual(["length"]);
    }
  });

  it("text calls on every server type; health probes", async () => {
    for (const type of SERVER_TYPES) {
      const backend = make({ server_type: type });
      const chat = await backend.chatCompletion({
        messages: [{ role: "user", content: "hi" }],
        n: 2,
      });
      expect(chat.choices, type).toHaveLength(2);
      expect(typeof chat.choices[0]?.message.content, type).toBe("string");
      expect(chat.choices[0]?.message.content, type).not.toContain("<|im_end|>");
      const text = await backend.completion({ prompt: "Once upon", max_tokens: 1 });
      expect(text.choices[0]?.finish_reason, type).toBe("length");
      expect(await backend.healthCheck(), type).toBe(true);
    }
  });

  it("a wrong base URL gets a 404 that names the fix", async () => {
    const error = await make({ server_type: "vllm", base_url: `${sim.url}/api` })
      .generateTokens({ inputIds: [1, 2], n: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InferenceHttpError);
    expect(String(error)).toMatch(/answered 404: Not Found\. This is not stock `vllm serve`/);
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

describe("a server refusing vLLM's token fields", () => {
  it("names the server type to use (transformers serve answers 422 Unexpected fields)", () => {
    const body = JSON.stringify({
      detail:
        "Unexpected fields in the request: {'return_token_ids', 'return_tokens_as_token_ids'}",
    });
    const error = new InferenceHttpError(422, "http://127.0.0.1:8000/v1/completions", body);
    expect(error.message).toContain("answered 422: Unexpected fields in the request");
    expect(error.message).toMatch(
      /use --server-type openai for a text-only OpenAI-compatible server such as `transformers serve`/,
    );
    expect(error.retryable).toBe(false);
    const other = new InferenceHttpError(
      422,
      "http://x/v1/completions",
      '{"detail":"n must be >= 1"}',
    );
    expect(other.message).not.toContain("--server-type");
  });
});
