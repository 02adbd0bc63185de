import type { ToolCall } from "../../../core/group-types";
import type {
  ChatChoice,
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionChoice,
  CompletionParams,
  CompletionResult,
} from "../types";
import {
  asArray,
  asRecord,
  type FetchLike,
  InferenceProtocolError,
  postJson,
  probe,
  trimSlash,
} from "./http";
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

/**
 * OpenAI-compatible text generation with Atropos' `n` handling: when the server ignores `n`
 * (configured, or detected from a 1-choice answer) the remaining choices come from parallel
 * requests without `n`.
 */
export class OpenAICompatibleText {
  private nKwargIsIgnored: boolean;

  constructor(
    private readonly baseUrl: string,
    private readonly model: string,
    private readonly apiKey: string | null,
    private readonly fetchFn: FetchLike,
    nKwargIsIgnored: boolean,
  ) {
    this.nKwargIsIgnored = nKwargIsIgnored;
  }

  chat(params: ChatCompletionParams, options: CallOptions = {}): Promise<ChatCompletionResult> {
    return this.withN(params, options, "/chat/completions", parseChatResponse);
  }

  completion(params: CompletionParams, options: CallOptions = {}): Promise<CompletionResult> {
    return this.withN(params, options, "/completions", parseCompletionResponse);
  }

  private async withN<R extends WithChoices<{ index: number }>>(
    params: Record<string, unknown> & { n?: number },
    options: CallOptions,
    path: string,
    parse: (raw: unknown) => R,
  ): Promise<R> {
    const n = params.n ?? 1;
    const url = `${trimSlash(this.baseUrl)}${path}`;
    const ctx = { fetch: this.fetchFn, signal: options.signal, apiKey: this.apiKey };
    const single = async () =>
      parse(await postJson(ctx, url, requestBody(params, this.model, { n: undefined })));
    if (this.nKwargIsIgnored && n > 1) {
      return mergeChoices(await Promise.all(Array.from({ length: n }, single)));
    }
    const first = parse(
      await postJson(ctx, url, requestBody(params, this.model, { n: n > 1 ? n : undefined })),
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

/** Any OpenAI-compatible endpoint (OpenAI, OpenRouter, Together, vLLM without token ids...). */
export class OpenAIBackend implements InferenceBackend {
  readonly serverType = "openai" as const;
  readonly tokenSupport = "none" as const;
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

  generateTokens(_request: TokenGenerationRequest): Promise<never> {
    return Promise.reject(
      new Error(
        "server_type openai returns no token ids; use vllm or sglang for token-level training data",
      ),
    );
  }

  healthCheck(options: CallOptions = {}): Promise<boolean> {
    // GET /models is free; Atropos' 1 Hz chat "hi" probe costs money on paid APIs.
    const { config } = this.deps;
    return probe(
      { fetch: this.deps.fetch, signal: options.signal, apiKey: config.api_key },
      `${trimSlash(config.base_url)}/models`,
    );
  }
}
