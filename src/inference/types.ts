/**
 * Contracts of the inference layer. Environments depend only on these interfaces;
 * implementations live beside this file (server-manager.ts, managed-server.ts, backends/).
 */

import type { ToolFormatName } from "../core/tool-calls/format";
import type { ChatMessage, ToolCall, ToolDefinition } from "../core/wire/group-types";

export type { ToolDefinition } from "../core/wire/group-types";

export type { ServerType } from "../core/wire/server-config";

export interface ChatCompletionParams {
  messages: ChatMessage[];
  n?: number;
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  stop?: string[];
  tools?: ToolDefinition[];
  tool_choice?: "auto" | "none" | "required";
  /** The tool-call format to render and parse (default "auto": the tokenizer family's). */
  tool_format?: ToolFormatName | "auto";
  /** "train" (default) or "eval": selects the concurrency pool. */
  split?: "train" | "eval";
  seed?: number;
  [extra: string]: unknown;
}

export interface CompletionParams {
  prompt: string;
  n?: number;
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  stop?: string[];
  split?: "train" | "eval";
  seed?: number;
  [extra: string]: unknown;
}

export interface ChatChoice {
  index: number;
  message: { role: "assistant"; content: string | null; tool_calls?: ToolCall[] };
  finish_reason: string;
}

export interface ChatCompletionResult {
  id: string;
  model: string;
  choices: ChatChoice[];
}

export interface CompletionChoice {
  index: number;
  text: string;
  finish_reason: string;
}

export interface CompletionResult {
  id: string;
  model: string;
  choices: CompletionChoice[];
}

/** Token-in/token-out result: exactly the sampled ids and their logprobs. */
export interface TokensAndLogprobs {
  promptTokens: number[];
  outputTokens: number[][];
  outputLogprobs: number[][];
  finishReasons: string[];
  /** true when the backend returns no logprobs (TRL): outputLogprobs are then empty lists. */
  logprobsUnavailable?: boolean;
}

/** A tracked sequence: prompt + completion tokens with training masks and logprobs. */
export interface SequenceNode {
  full_text: string;
  tokens: number[];
  /** -100 on prompt positions, the token id on trainable positions. */
  masked_tokens: number[];
  /** 1.0 on prompt positions, the sampled logprob elsewhere. */
  logprobs: number[];
  metadata: {
    finish_reason: string;
    /** true when the backend could not return token ids (see docs/INFERENCE.md). */
    tokens_unavailable?: boolean;
    [extra: string]: unknown;
  };
}

export interface ApplyChatTemplateOptions {
  addGenerationPrompt?: boolean;
  tools?: ToolDefinition[];
  enableThinking?: boolean;
  /**
   * How tool calls are written and replayed (default: the tokenizer family's format, see
   * src/core/tool-calls); used where the template ignores `tools` or tool calls.
   */
  toolFormat?: ToolFormatName;
}

export interface Tokenizer {
  readonly name: string;
  readonly eosTokenId: number;
  readonly bosTokenId: number | null;
  /** Every token id that ends generation (end-of-turn, end-of-text); defaults to [eosTokenId]. */
  readonly stopTokenIds?: readonly number[];
  /** Ids that `decode(…, {skipSpecialTokens: true})` removes; lets callers skip a second decode. */
  readonly specialTokenIds?: ReadonlySet<number>;
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  decode(ids: number[], options?: { skipSpecialTokens?: boolean }): string;
  applyChatTemplate(messages: ChatMessage[], options?: ApplyChatTemplateOptions): string;
}

/** A ManagedServer's tracked sequences and the raw text of its tool calls (replayed verbatim). */
export interface ManagedServerState {
  nodes: SequenceNode[];
  tool_texts?: Record<string, string>;
}

export interface ManagedServer {
  chatCompletion(params: ChatCompletionParams): Promise<ChatCompletionResult>;
  completion(params: CompletionParams): Promise<CompletionResult>;
  getState(): ManagedServerState;
  reset(): void;
}

export interface InferenceClient {
  chatCompletion(params: ChatCompletionParams): Promise<ChatCompletionResult>;
  completion(params: CompletionParams): Promise<CompletionResult>;
  tokensAndLogprobsCompletion(
    params: CompletionParams & { input_ids?: number[] },
  ): Promise<TokensAndLogprobs>;
  /** A ManagedServer bound to the least-loaded healthy server; call reset() or drop it after use. */
  managedServer(options?: {
    tokenizer?: Tokenizer;
    preserveThinkBlocks?: boolean;
    /**
     * Always render and tokenize chats on the client (loads the tokenizer), even where the
     * server could template them and return the ids (server_type vllm).
     */
    clientTemplate?: boolean;
    /** Continue from an earlier instance's getState() (the inference proxy, between requests). */
    state?: ManagedServerState;
    /** Aborts the instance's requests (the inference proxy's client went away). */
    signal?: AbortSignal;
  }): Promise<ManagedServer>;
  /** Scale this env's share of each server's request slots (Atropos `env_weight`). */
  updateWeight(weight: number): void;
}
