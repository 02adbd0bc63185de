import type { APIServerConfig } from "../../core/wire/server-config";
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

/** A text completion with the ids the server used and sampled (vLLM `return_token_ids`). */
export interface CompletionWithTokens {
  completion: CompletionResult;
  tokens: TokensAndLogprobs;
}

/** A chat answer with the ids the server used and sampled (vLLM `return_token_ids`). */
export interface ChatWithTokens {
  chat: ChatCompletionResult;
  tokens: TokensAndLogprobs;
}

/** A token-in/token-out generation request: the prompt is exactly these ids. */
export interface TokenGenerationRequest {
  inputIds: number[];
  n: number;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  stop?: string[];
  seed?: number;
  /**
   * Further sampling parameters in vLLM/OpenAI spelling: top_k, min_p, repetition_penalty are
   * sent under each server's own names, anything else as it is.
   */
  extra?: Record<string, unknown>;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/**
 * What a backend can do with token ids:
 * - "exact": sampled ids and their logprobs (vLLM, Atropos' server, SGLang, TRL ≥ 1.0);
 * - "ids-only": sampled ids, no logprobs (TRL before 0.23, found out per answer);
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
  /**
   * Chat through the server's own chat template, with the prompt and sampled ids and logprobs
   * it used: no local tokenizer needed. Only where the server can return ids (stock vLLM).
   */
  chatCompletionWithTokens?(
    params: ChatCompletionParams,
    options?: CallOptions,
  ): Promise<ChatWithTokens>;
  /**
   * A text completion (string or token-id prompt) with the prompt ids the server used and the
   * sampled ids and logprobs: no local tokenizer needed. Only stock vLLM.
   */
  completionWithTokens?(
    params: CompletionParams,
    options?: CallOptions,
  ): Promise<CompletionWithTokens>;
  /** A cheap, free probe (never a paid generation). */
  healthCheck(options?: CallOptions): Promise<boolean>;
}

export interface BackendDeps {
  config: APIServerConfig;
  fetch: FetchLike;
  /**
   * Lazily loads the server's tokenizer: for the text calls of servers without OpenAI routes
   * (Atropos' server, TRL), never for token-in/token-out calls.
   */
  tokenizer: () => Promise<Tokenizer>;
}
