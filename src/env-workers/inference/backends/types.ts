import type { APIServerConfig } from "../../../core/server-config";
import type {
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionParams,
  CompletionResult,
  ServerType,
  Tokenizer,
  TokensAndLogprobs,
} from "../types";
import type { FetchLike } from "./http";

/** A token-in/token-out generation request: the prompt is exactly these ids. */
export interface TokenGenerationRequest {
  inputIds: number[];
  n: number;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  stop?: string[];
  seed?: number;
  /** Further sampling parameters passed through to the server (e.g. top_k, min_p). */
  extra?: Record<string, unknown>;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/**
 * What a backend can do with token ids:
 * - "exact": sampled ids and their logprobs (vLLM, SGLang);
 * - "ids-only": sampled ids, no logprobs (TRL vllm-serve);
 * - "none": text only (OpenAI-compatible APIs).
 */
export type TokenSupport = "exact" | "ids-only" | "none";

export interface InferenceBackend {
  readonly serverType: ServerType;
  readonly tokenSupport: TokenSupport;
  chatCompletion(
    params: ChatCompletionParams,
    options?: CallOptions,
  ): Promise<ChatCompletionResult>;
  completion(params: CompletionParams, options?: CallOptions): Promise<CompletionResult>;
  generateTokens(
    request: TokenGenerationRequest,
    options?: CallOptions,
  ): Promise<TokensAndLogprobs>;
  /** A cheap, free probe (never a paid generation). */
  healthCheck(options?: CallOptions): Promise<boolean>;
}

export interface BackendDeps {
  config: APIServerConfig;
  fetch: FetchLike;
  /** Lazily loads the server's tokenizer (TRL needs it for chat templates and decoding). */
  tokenizer: () => Promise<Tokenizer>;
}
