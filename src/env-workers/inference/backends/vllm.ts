import type {
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionParams,
  CompletionResult,
  TokensAndLogprobs,
} from "../types";
import {
  asArray,
  asNumber,
  asRecord,
  flattenFinishReason,
  InferenceProtocolError,
  parseJsonText,
  postJson,
  postText,
  probe,
  type RequestContext,
  rootUrl,
  trimSlash,
} from "./http";
import { OpenAICompatibleText } from "./openai";
import { samplingParams } from "./sampling";
import type { BackendDeps, CallOptions, InferenceBackend, TokenGenerationRequest } from "./types";
import { scanVllmGenerateBody } from "./vllm-generate-scan";

/**
 * vLLM. Text calls use its OpenAI-compatible routes. Token calls use either Atropos' custom
 * `/generate` server (vllm_mode "generate", docs/INFERENCE.md) or the stock OpenAI server's
 * `/v1/completions` with a token-id prompt (vllm_mode "openai").
 */
export class VLLMBackend implements InferenceBackend {
  readonly serverType = "vllm" as const;
  readonly tokenSupport = "exact" as const;
  private readonly text: OpenAICompatibleText;

  constructor(private readonly deps: BackendDeps) {
    const { config } = deps;
    this.text = new OpenAICompatibleText(
      config.base_url,
      config.model_name,
      config.api_key,
      deps.fetch,
      config.n_kwarg_is_ignored,
    );
  }

  chatCompletion(
    params: ChatCompletionParams,
    options?: CallOptions,
  ): Promise<ChatCompletionResult> {
    return this.text.chat(params, options);
  }

  completion(params: CompletionParams, options?: CallOptions): Promise<CompletionResult> {
    return this.text.completion(params, options);
  }

  async generateTokens(
    request: TokenGenerationRequest,
    options: CallOptions = {},
  ): Promise<TokensAndLogprobs> {
    const ctx = this.context(options);
    const { config } = this.deps;
    if (config.vllm_mode === "openai") {
      const raw = await postJson(
        ctx,
        `${trimSlash(config.base_url)}/completions`,
        buildVllmOpenAIRequest(request, config.model_name),
      );
      return parseVllmOpenAIResponse(raw, request.inputIds);
    }
    const url = `${rootUrl(config.base_url)}/generate`;
    const text = await postText(ctx, url, buildVllmGenerateRequest(request));
    return parseVllmGenerateText(text, request.inputIds, url);
  }

  healthCheck(options: CallOptions = {}): Promise<boolean> {
    return probe(this.context(options), `${rootUrl(this.deps.config.base_url)}/health`);
  }

  private context(options: CallOptions): RequestContext {
    return { fetch: this.deps.fetch, signal: options.signal, apiKey: this.deps.config.api_key };
  }
}

/** Atropos `/generate`: `{"prompt":{"prompt_token_ids":[...]}, "logprobs":0, ...SamplingParams}`. */
export function buildVllmGenerateRequest(request: TokenGenerationRequest): Record<string, unknown> {
  return {
    prompt: { prompt_token_ids: request.inputIds },
    logprobs: 0,
    ...samplingParams(request),
  };
}

/**
 * The `/generate` answer as text: the single-pass scanner when the body has the usual shape,
 * else JSON.parse + parseVllmGenerateResponse (same result, same errors).
 */
export function parseVllmGenerateText(
  text: string,
  promptTokens: number[],
  url: string,
): TokensAndLogprobs {
  const scanned = scanVllmGenerateBody(text);
  if (!scanned) return parseVllmGenerateResponse(parseJsonText(text, url), promptTokens);
  const finishReasons = Array.isArray(scanned.finishReasons) ? scanned.finishReasons : [];
  return {
    promptTokens,
    outputTokens: scanned.outputTokens,
    outputLogprobs: scanned.outputLogprobs,
    finishReasons: scanned.outputTokens.map((_, i) => flattenFinishReason(finishReasons[i])),
  };
}

/** `logprobs[choice][position] = [{"<id>": logprob}]`, `finish_reasons[choice]`. */
export function parseVllmGenerateResponse(raw: unknown, promptTokens: number[]): TokensAndLogprobs {
  const body = asRecord(raw, "vllm /generate");
  const perChoice = asArray(body.logprobs, "vllm /generate logprobs");
  const finishReasons = Array.isArray(body.finish_reasons) ? body.finish_reasons : [];
  const outputTokens: number[][] = [];
  const outputLogprobs: number[][] = [];
  for (const choice of perChoice) {
    const ids: number[] = [];
    const logprobs: number[] = [];
    for (const position of asArray(choice, "vllm /generate logprobs[choice]")) {
      const entry = Array.isArray(position) ? position[0] : position;
      const [pair] = Object.entries(asRecord(entry, "vllm /generate logprob entry"));
      if (!pair) throw new InferenceProtocolError("vllm /generate: empty logprob entry");
      const id = Number(pair[0]);
      if (!Number.isInteger(id))
        throw new InferenceProtocolError(`vllm /generate: bad token id ${pair[0]}`);
      ids.push(id);
      logprobs.push(asNumber(pair[1], "vllm /generate logprob"));
    }
    outputTokens.push(ids);
    outputLogprobs.push(logprobs);
  }
  return {
    promptTokens,
    outputTokens,
    outputLogprobs,
    finishReasons: outputTokens.map((_, i) => flattenFinishReason(finishReasons[i])),
  };
}

/** Stock vLLM: token-id prompt, sampled logprobs, tokens returned as "token_id:<id>". */
export function buildVllmOpenAIRequest(
  request: TokenGenerationRequest,
  model: string,
): Record<string, unknown> {
  return {
    model,
    prompt: request.inputIds,
    logprobs: 0,
    return_tokens_as_token_ids: true,
    ...samplingParams(request),
  };
}

export function parseVllmOpenAIResponse(raw: unknown, promptTokens: number[]): TokensAndLogprobs {
  const body = asRecord(raw, "vllm /v1/completions");
  const choices = asArray(body.choices, "vllm /v1/completions choices")
    .map((entry) => asRecord(entry, "completion choice"))
    .sort((a, b) => Number(a.index ?? 0) - Number(b.index ?? 0));
  const result: TokensAndLogprobs = {
    promptTokens,
    outputTokens: [],
    outputLogprobs: [],
    finishReasons: [],
  };
  for (const choice of choices) {
    const logprobs = asRecord(
      choice.logprobs,
      "completion choice logprobs (was logprobs requested?)",
    );
    const tokens = asArray(logprobs.tokens, "logprobs.tokens").map((token) => {
      const match = typeof token === "string" ? /^token_id:(-?\d+)$/.exec(token) : null;
      if (!match) {
        throw new InferenceProtocolError(
          `expected "token_id:<id>" tokens (return_tokens_as_token_ids), got ${JSON.stringify(token)}`,
        );
      }
      return Number(match[1]);
    });
    const values = asArray(logprobs.token_logprobs, "logprobs.token_logprobs").map((value) =>
      asNumber(value, "token logprob"),
    );
    result.outputTokens.push(tokens);
    result.outputLogprobs.push(values);
    result.finishReasons.push(flattenFinishReason(choice.finish_reason));
  }
  return result;
}
