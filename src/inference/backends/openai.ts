import type { ToolCall } from "../../core/wire/group-types";
import type { ServerType } from "../../core/wire/server-config";
import type {
  ChatChoice,
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionChoice,
  CompletionParams,
  CompletionResult,
} from "../types";
import { BackendBase } from "./base";
import { notFoundHint } from "./hints";
import {
  asArray,
  asRecord,
  type FetchLike,
  InferenceProtocolError,
  pathOf,
  postJson,
  probe,
  trimSlash,
} from "./http";
import { SAMPLING_DEFAULTS, withTextDefaults } from "./sampling";
import type { BackendDeps, CallOptions, InferenceBackend, TokenGenerationRequest } from "./types";

/** Keys of our params objects that are routing hints, never sent to a server. */
const INTERNAL_KEYS = new Set(["split"]);

export function requestBody(
  params: Record<string, unknown>,
  model: string,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const body: Record<string, unknown> = { model };
  for (const [key, value] of Object.entries(params)) {
    if (!INTERNAL_KEYS.has(key) && value !== undefined) body[key] = value;
  }
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) delete body[key];
    else body[key] = value;
  }
  return body;
}

export function parseChatResponse(raw: unknown): ChatCompletionResult {
  const body = asRecord(raw, "chat completion");
  const choices = asArray(body.choices, "chat completion choices").map((entry, position) => {
    const choice = asRecord(entry, "chat choice");
    const message = asRecord(choice.message, "chat choice message");
    const toolCalls = Array.isArray(message.tool_calls) ? (message.tool_calls as ToolCall[]) : [];
    const parsed: ChatChoice = {
      index: typeof choice.index === "number" ? choice.index : position,
      message: {
        role: "assistant",
        content: typeof message.content === "string" ? message.content : null,
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      },
      finish_reason: typeof choice.finish_reason === "string" ? choice.finish_reason : "stop",
    };
    return parsed;
  });
  return {
    id: typeof body.id === "string" ? body.id : crypto.randomUUID(),
    model: typeof body.model === "string" ? body.model : "",
    choices,
  };
}

export function parseCompletionResponse(raw: unknown): CompletionResult {
  const body = asRecord(raw, "completion");
  const choices = asArray(body.choices, "completion choices").map((entry, position) => {
    const choice = asRecord(entry, "completion choice");
    if (typeof choice.text !== "string")
      throw new InferenceProtocolError("completion choice: no text");
    const parsed: CompletionChoice = {
      index: typeof choice.index === "number" ? choice.index : position,
      text: choice.text,
      finish_reason: typeof choice.finish_reason === "string" ? choice.finish_reason : "stop",
    };
    return parsed;
  });
  return {
    id: typeof body.id === "string" ? body.id : crypto.randomUUID(),
    model: typeof body.model === "string" ? body.model : "",
    choices,
  };
}

interface WithChoices<C> {
  choices: C[];
}

export interface OpenAICompatibleTextOptions {
  baseUrl: string;
  model: string;
  apiKey: string | null;
  fetch: FetchLike;
  nKwargIsIgnored: boolean;
  /** Names the server type in a "no such route" 404. */
  serverType: ServerType;
  /**
   * "all": every sampling value the caller left out gets its default (vLLM, SGLang: their
   * OpenAI routes take top_k/min_p/repetition_penalty too). "completions-max-tokens": only
   * `/completions` gets a max_tokens (the legacy OpenAI API also defaults it to 16); other
   * providers reject fields they do not know, so nothing else is added.
   */
  defaults: "all" | "completions-max-tokens";
}

/**
 * OpenAI-compatible text generation with Atropos' `n` handling: when the server ignores `n`
 * (configured, or detected from a 1-choice answer) the remaining choices come from parallel
 * requests without `n`.
 */
export class OpenAICompatibleText {
  private nKwargIsIgnored: boolean;

  constructor(private readonly options: OpenAICompatibleTextOptions) {
    this.nKwargIsIgnored = options.nKwargIsIgnored;
  }

  chat(params: ChatCompletionParams, options: CallOptions = {}): Promise<ChatCompletionResult> {
    const filled = this.options.defaults === "all" ? withTextDefaults(params) : params;
    return this.withN(filled, options, "/chat/completions", parseChatResponse);
  }

  completion(params: CompletionParams, options: CallOptions = {}): Promise<CompletionResult> {
    let filled = params;
    if (this.options.defaults === "all") filled = withTextDefaults(params);
    else if (params.max_tokens === undefined) {
      filled = { ...params, max_tokens: SAMPLING_DEFAULTS.max_tokens };
    }
    return this.withN(filled, options, "/completions", parseCompletionResponse);
  }

  private async withN<R extends WithChoices<{ index: number }>>(
    params: Record<string, unknown> & { n?: number },
    options: CallOptions,
    path: string,
    parse: (raw: unknown) => R,
  ): Promise<R> {
    const n = params.n ?? 1;
    const { baseUrl, model, apiKey, fetch, serverType } = this.options;
    const url = `${trimSlash(baseUrl)}${path}`;
    const ctx = {
      fetch,
      signal: options.signal,
      apiKey,
      notFoundHint: notFoundHint(serverType, pathOf(url)),
    };
    const single = async () =>
      parse(await postJson(ctx, url, requestBody(params, model, { n: undefined })));
    if (this.nKwargIsIgnored && n > 1) {
      return mergeChoices(await Promise.all(Array.from({ length: n }, single)));
    }
    const first = parse(
      await postJson(ctx, url, requestBody(params, model, { n: n > 1 ? n : undefined })),
    );
    if (first.choices.length === n) return first;
    if (first.choices.length === 1 && n > 1) {
      this.nKwargIsIgnored = true;
      const rest = await Promise.all(Array.from({ length: n - 1 }, single));
      return mergeChoices([first, ...rest]);
    }
    throw new InferenceProtocolError(
      `asked for ${n} choices, server returned ${first.choices.length}`,
    );
  }
}

/** Concatenates choices of several responses into the first, renumbering `index` 0..n-1. */
export function mergeChoices<R extends WithChoices<{ index: number }>>(responses: R[]): R {
  const [first] = responses;
  if (!first) throw new Error("mergeChoices: no responses");
  const choices = responses.flatMap((response) => response.choices);
  return { ...first, choices: choices.map((choice, index) => ({ ...choice, index })) };
}

/** A backend whose text calls go to the server's OpenAI-compatible routes. */
export abstract class OpenAITextBackend extends BackendBase {
  protected readonly text: OpenAICompatibleText;

  constructor(deps: BackendDeps, defaults: OpenAICompatibleTextOptions["defaults"]) {
    super(deps);
    this.text = openAIText(deps, defaults);
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
}

/** Any OpenAI-compatible endpoint (OpenAI, OpenRouter, Together, vLLM without token ids...). */
export class OpenAIBackend extends OpenAITextBackend implements InferenceBackend {
  readonly serverType = "openai" as const;
  readonly tokenSupport = "none" as const;

  constructor(deps: BackendDeps) {
    super(deps, "completions-max-tokens");
  }

  generateTokens(_request: TokenGenerationRequest): Promise<never> {
    return Promise.reject(
      new Error(
        "server_type openai returns no token ids (not token-exact); use --server-type vllm, vllm-generate, atropos, sglang or trl for token-level training data",
      ),
    );
  }

  healthCheck(options: CallOptions = {}): Promise<boolean> {
    // GET /models is free; Atropos' 1 Hz chat "hi" probe costs money on paid APIs.
    return probe(this.context(options), `${trimSlash(this.deps.config.base_url)}/models`);
  }
}

/** The text routes of a server from its config. */
export function openAIText(
  deps: BackendDeps,
  defaults: OpenAICompatibleTextOptions["defaults"],
): OpenAICompatibleText {
  const { config } = deps;
  return new OpenAICompatibleText({
    baseUrl: config.base_url,
    model: config.model_name,
    apiKey: config.api_key,
    fetch: deps.fetch,
    nKwargIsIgnored: config.n_kwarg_is_ignored,
    serverType: config.server_type,
    defaults,
  });
}
