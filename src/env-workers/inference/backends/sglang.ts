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
  postJson,
  probe,
  type RequestContext,
  rootUrl,
} from "./http";
import { OpenAICompatibleText } from "./openai";
import { samplingParams } from "./sampling";
import type { BackendDeps, CallOptions, InferenceBackend, TokenGenerationRequest } from "./types";

/** SGLang: OpenAI-compatible text routes, native `/generate` with `input_ids` for tokens. */
export class SGLangBackend implements InferenceBackend {
  readonly serverType = "sglang" as const;
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
    const url = `${rootUrl(this.deps.config.base_url)}/generate`;
    const raw = await postJson(this.context(options), url, buildSGLangGenerateRequest(request));
    return parseSGLangGenerateResponse(raw, request.inputIds);
  }

  healthCheck(options: CallOptions = {}): Promise<boolean> {
    return probe(this.context(options), `${rootUrl(this.deps.config.base_url)}/health`);
  }

  private context(options: CallOptions): RequestContext {
    return { fetch: this.deps.fetch, signal: options.signal, apiKey: this.deps.config.api_key };
  }
}

export function buildSGLangGenerateRequest(
  request: TokenGenerationRequest,
): Record<string, unknown> {
  return {
    input_ids: request.inputIds,
    sampling_params: samplingParams(request, "max_new_tokens"),
    return_logprob: true,
    return_text_in_logprobs: false,
  };
}

/** One object per choice (an array when n > 1): meta_info.output_token_logprobs = [[lp, id, text]]. */
export function parseSGLangGenerateResponse(
  raw: unknown,
  promptTokens: number[],
): TokensAndLogprobs {
  const items = Array.isArray(raw) ? raw : [raw];
  const result: TokensAndLogprobs = {
    promptTokens,
    outputTokens: [],
    outputLogprobs: [],
    finishReasons: [],
  };
  for (const item of items) {
    const meta = asRecord(asRecord(item, "sglang /generate item").meta_info, "sglang meta_info");
    const ids: number[] = [];
    const logprobs: number[] = [];
    for (const triple of asArray(meta.output_token_logprobs, "meta_info.output_token_logprobs")) {
      const [logprob, id] = asArray(triple, "output_token_logprobs entry");
      ids.push(asNumber(id, "sglang token id"));
      logprobs.push(asNumber(logprob, "sglang logprob"));
    }
    result.outputTokens.push(ids);
    result.outputLogprobs.push(logprobs);
    result.finishReasons.push(flattenFinishReason(meta.finish_reason));
  }
  return result;
}
