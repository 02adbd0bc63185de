import type {
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionParams,
  CompletionResult,
  Tokenizer,
  TokensAndLogprobs,
} from "../types";
import { asArray, asNumber, asRecord, postJson, probe, type RequestContext, rootUrl } from "./http";
import type { BackendDeps, CallOptions, InferenceBackend, TokenGenerationRequest } from "./types";

interface TrlSampling {
  n?: number;
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  [extra: string]: unknown;
}

/**
 * TRL `vllm-serve`: `POST /generate/ {"prompts":[text]}` → `{"completion_ids":[[...]]}`.
 * It returns no logprobs, so it cannot back exact ManagedServer logprobs (never faked here).
 */
export class TrlBackend implements InferenceBackend {
  readonly serverType = "trl" as const;
  readonly tokenSupport = "ids-only" as const;

  constructor(private readonly deps: BackendDeps) {}

  async chatCompletion(
    params: ChatCompletionParams,
    options: CallOptions = {},
  ): Promise<ChatCompletionResult> {
    const tokenizer = await this.deps.tokenizer();
    const prompt = tokenizer.applyChatTemplate(params.messages, {
      addGenerationPrompt: true,
      tools: params.tools,
    });
    const completions = await this.generate(prompt, params, options);
    return {
      id: crypto.randomUUID(),
      model: this.deps.config.model_name,
      choices: completions.map((ids, index) => ({
        index,
        message: { role: "assistant", content: decodeCompletion(tokenizer, ids) },
        finish_reason: trlFinishReason(tokenizer, ids),
      })),
    };
  }

  async completion(params: CompletionParams, options: CallOptions = {}): Promise<CompletionResult> {
    const tokenizer = await this.deps.tokenizer();
    const completions = await this.generate(params.prompt, params, options);
    return {
      id: crypto.randomUUID(),
      model: this.deps.config.model_name,
      choices: completions.map((ids, index) => ({
        index,
        text: decodeCompletion(tokenizer, ids),
        finish_reason: trlFinishReason(tokenizer, ids),
      })),
    };
  }

  async generateTokens(
    request: TokenGenerationRequest,
    options: CallOptions = {},
  ): Promise<TokensAndLogprobs> {
    const tokenizer = await this.deps.tokenizer();
    // TRL takes text prompts: the server re-tokenizes the decoded ids.
    const prompt = tokenizer.decode(request.inputIds);
    const completions = await this.generate(
      prompt,
      {
        ...request.extra,
        n: request.n,
        max_tokens: request.maxTokens,
        temperature: request.temperature,
        top_p: request.topP,
      },
      options,
    );
    return {
      promptTokens: request.inputIds,
      outputTokens: completions,
      outputLogprobs: completions.map(() => []),
      finishReasons: completions.map((ids) => trlFinishReason(tokenizer, ids)),
      logprobsUnavailable: true,
    };
  }

  healthCheck(options: CallOptions = {}): Promise<boolean> {
    return probe(this.context(options), `${rootUrl(this.deps.config.base_url)}/health/`);
  }

  private async generate(
    prompt: string,
    sampling: TrlSampling,
    options: CallOptions,
  ): Promise<number[][]> {
    const url = `${rootUrl(this.deps.config.base_url)}/generate/`;
    const raw = await postJson(
      this.context(options),
      url,
      buildTrlGenerateRequest(prompt, sampling),
    );
    return parseTrlGenerateResponse(raw);
  }

  private context(options: CallOptions): RequestContext {
    return { fetch: this.deps.fetch, signal: options.signal, apiKey: this.deps.config.api_key };
  }
}

/** Atropos' TRL defaults (docs/INFERENCE.md), overridden by the caller's values. */
export function buildTrlGenerateRequest(
  prompt: string,
  sampling: TrlSampling,
): Record<string, unknown> {
  return {
    prompts: [prompt],
    n: sampling.n ?? 1,
    repetition_penalty: sampling.repetition_penalty ?? 1.0,
    temperature: sampling.temperature ?? 1.0,
    top_p: sampling.top_p ?? 1.0,
    top_k: sampling.top_k ?? -1,
    min_p: sampling.min_p ?? 0.0,
    max_tokens: sampling.max_tokens ?? 1024,
  };
}

export function parseTrlGenerateResponse(raw: unknown): number[][] {
  const body = asRecord(raw, "trl /generate/");
  return asArray(body.completion_ids, "trl completion_ids").map((ids) =>
    asArray(ids, "trl completion_ids[i]").map((id) => asNumber(id, "trl token id")),
  );
}

function stopIds(tokenizer: Tokenizer): readonly number[] {
  return tokenizer.stopTokenIds ?? [tokenizer.eosTokenId];
}

export function trlFinishReason(tokenizer: Tokenizer, ids: number[]): string {
  return ids.some((id) => stopIds(tokenizer).includes(id)) ? "stop" : "length";
}

function decodeCompletion(tokenizer: Tokenizer, ids: number[]): string {
  return tokenizer.decode(ids, { skipSpecialTokens: true });
}
