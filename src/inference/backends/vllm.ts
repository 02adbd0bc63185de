/**
 * Stock vLLM (`vllm serve`). Two server types:
 * - "vllm": the OpenAI-compatible API. Tokens through `/v1/completions` with the prompt as token
 *   ids, `return_token_ids` (vLLM ≥ 0.10.2: `token_ids` + `prompt_token_ids` per choice) and
 *   `logprobs: 0` + `return_tokens_as_token_ids` (older versions: `"token_id:<id>"` tokens).
 *   Also `/v1/chat/completions` with the same flags (chatCompletionWithTokens), where the server
 *   renders the chat template and returns the prompt ids it used.
 * - "vllm-generate": the token-in/token-out `/inference/v1/generate` endpoint at the server root.
 * Wire facts and sources: docs/INFERENCE.md, test/fixtures/inference/vllm-*.json.
 */
import type { ChatCompletionParams, CompletionParams, TokensAndLogprobs } from "../types";
import {
  asArray,
  asRecord,
  flattenFinishReason,
  InferenceMismatchError,
  InferenceProtocolError,
  probe,
  rootUrl,
  trimSlash,
} from "./http";
import {
  OpenAITextBackend,
  parseChatResponse,
  parseCompletionResponse,
  requestBody,
} from "./openai";
import { resolveSampling, vllmSamplingFields, withTextDefaults } from "./sampling";
import { placeholderTokenId, sameIds, sampledLogprob, tokenIdList } from "./tokens";
import type {
  BackendDeps,
  CallOptions,
  ChatWithTokens,
  CompletionWithTokens,
  InferenceBackend,
  TokenGenerationRequest,
} from "./types";

/** Stock `vllm serve`, through its OpenAI-compatible API. */
export class VLLMBackend extends OpenAITextBackend implements InferenceBackend {
  readonly serverType = "vllm" as const;
  readonly tokenSupport = "exact" as const;

  constructor(deps: BackendDeps) {
    super(deps, "all");
  }

  async generateTokens(
    request: TokenGenerationRequest,
    options: CallOptions = {},
  ): Promise<TokensAndLogprobs> {
    const { config } = this.deps;
    const url = `${trimSlash(config.base_url)}/completions`;
    const raw = await this.postTo(
      url,
      buildVllmCompletionsRequest(request, config.model_name),
      options,
    );
    return parseVllmCompletionsResponse(raw, request.inputIds);
  }

  /** A chat completion whose prompt and output ids come from the server (vLLM ≥ 0.10.2). */
  async chatCompletionWithTokens(
    params: ChatCompletionParams,
    options: CallOptions = {},
  ): Promise<ChatWithTokens> {
    const { config } = this.deps;
    const url = `${trimSlash(config.base_url)}/chat/completions`;
    const raw = await this.postTo(
      url,
      buildVllmChatTokensRequest(params, config.model_name),
      options,
    );
    return parseVllmChatTokensResponse(raw);
  }

  /** A text completion whose prompt and output ids come from the server (vLLM ≥ 0.10.2). */
  async completionWithTokens(
    params: CompletionParams,
    options: CallOptions = {},
  ): Promise<CompletionWithTokens> {
    const { config } = this.deps;
    const url = `${trimSlash(config.base_url)}/completions`;
    const raw = await this.postTo(
      url,
      requestBody(withTextDefaults(params), config.model_name, { logprobs: 0, ...TOKEN_FLAGS }),
      options,
    );
    return parseVllmCompletionWithTokens(raw);
  }

  healthCheck(options: CallOptions = {}): Promise<boolean> {
    return probe(this.context(options), `${rootUrl(this.deps.config.base_url)}/health`);
  }
}

/** The text answer plus the ids: `prompt_token_ids` and `token_ids` on each choice. */
export function parseVllmCompletionWithTokens(raw: unknown): CompletionWithTokens {
  const completion = parseCompletionResponse(raw);
  const first = asRecord(
    asArray(asRecord(raw, "vllm /v1/completions").choices, "vllm /v1/completions choices")[0],
    "completion choice",
  );
  if (!Array.isArray(first.prompt_token_ids)) {
    throw new InferenceMismatchError(
      "vllm /v1/completions: no prompt_token_ids in the answer (return_token_ids needs vLLM ≥ 0.10.2)",
    );
  }
  const promptTokens = tokenIdList(first.prompt_token_ids, "prompt_token_ids");
  completion.choices.sort((a, b) => a.index - b.index);
  return { completion, tokens: parseVllmCompletionsResponse(raw, promptTokens) };
}

/** Stock `vllm serve`, token-in/token-out through `POST /inference/v1/generate`. */
export class VLLMGenerateBackend extends OpenAITextBackend implements InferenceBackend {
  readonly serverType = "vllm-generate" as const;
  readonly tokenSupport = "exact" as const;

  constructor(deps: BackendDeps) {
    super(deps, "all");
  }

  async generateTokens(
    request: TokenGenerationRequest,
    options: CallOptions = {},
  ): Promise<TokensAndLogprobs> {
    const { config } = this.deps;
    const url = `${rootUrl(config.base_url)}/inference/v1/generate`;
    const raw = await this.postTo(
      url,
      buildVllmTokensGenerateRequest(request, config.model_name),
      options,
    );
    return parseVllmTokensGenerateResponse(raw, request.inputIds);
  }

  healthCheck(options: CallOptions = {}): Promise<boolean> {
    return probe(this.context(options), `${rootUrl(this.deps.config.base_url)}/health`);
  }
}

const TOKEN_FLAGS = { return_tokens_as_token_ids: true, return_token_ids: true } as const;

/**
 * `POST /v1/completions`: the prompt as token ids, every sampling value, `logprobs: 0` (the
 * sampled token's logprob), `return_token_ids` (ids on vLLM ≥ 0.10.2) and
 * `return_tokens_as_token_ids` (`"token_id:<id>"` tokens on older ones; newer ones accept both,
 * older ones ignore the field they do not know).
 */
export function buildVllmCompletionsRequest(
  request: TokenGenerationRequest,
  model: string,
): Record<string, unknown> {
  return {
    model,
    prompt: request.inputIds,
    ...vllmSamplingFields(resolveSampling(request)),
    logprobs: 0,
    ...TOKEN_FLAGS,
  };
}

const NO_IDS =
  "the answer has neither token_ids (vLLM ≥ 0.10.2 with return_token_ids) nor " +
  '"token_id:<id>" logprob tokens (return_tokens_as_token_ids, vllm#6626, mid-2024): this is not a ' +
  "vLLM OpenAI server that can return token ids. Use --server-type sglang for SGLang, atropos " +
  "for Atropos' vllm_api_server.py, trl for trl vllm-serve, or openai (not token-exact)";

/**
 * `choices[i].token_ids` (or the `"token_id:<id>"` logprob tokens), `logprobs.token_logprobs`,
 * `finish_reason`; choices ordered by `index`. When both forms of the ids are there they must
 * agree, and a returned `prompt_token_ids` must be the prompt that was sent.
 */
export function parseVllmCompletionsResponse(
  raw: unknown,
  promptTokens: number[],
): TokensAndLogprobs {
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
    checkPrompt(choice.prompt_token_ids, promptTokens);
    if (choice.logprobs === null || choice.logprobs === undefined) {
      throw new InferenceMismatchError(
        `vllm /v1/completions: no logprobs in the answer although logprobs: 0 was asked; ${NO_IDS}`,
      );
    }
    const logprobs = asRecord(choice.logprobs, "completion choice logprobs");
    const tokens = Array.isArray(logprobs.tokens) ? logprobs.tokens : [];
    const ids = idsOf(choice.token_ids, tokens.map(placeholderTokenId), "vllm /v1/completions");
    const values = asArray(logprobs.token_logprobs, "logprobs.token_logprobs").map((value, i) =>
      sampledLogprob(value, `vllm /v1/completions token_logprobs[${i}]`),
    );
    if (values.length !== ids.length) {
      throw new InferenceProtocolError(
        `vllm /v1/completions: ${ids.length} token ids but ${values.length} logprobs`,
      );
    }
    result.outputTokens.push(ids);
    result.outputLogprobs.push(values);
    result.finishReasons.push(flattenFinishReason(choice.finish_reason));
  }
  return result;
}

/**
 * `POST /v1/chat/completions` asking for ids: the server renders the chat template, so this
 * needs no local tokenizer. `logprobs: true, top_logprobs: 0` gives the sampled token's logprob.
 */
export function buildVllmChatTokensRequest(
  params: ChatCompletionParams,
  model: string,
): Record<string, unknown> {
  return requestBody(withTextDefaults(params), model, {
    n: params.n ?? 1,
    logprobs: true,
    top_logprobs: 0,
    ...TOKEN_FLAGS,
  });
}

/** The chat answer plus the ids: top-level `prompt_token_ids`, per choice `token_ids`. */
export function parseVllmChatTokensResponse(raw: unknown): ChatWithTokens {
  const chat = parseChatResponse(raw);
  const body = asRecord(raw, "vllm /v1/chat/completions");
  if (!Array.isArray(body.prompt_token_ids)) {
    throw new InferenceMismatchError(
      "vllm /v1/chat/completions: no prompt_token_ids in the answer (return_token_ids needs vLLM ≥ 0.10.2); use generateTokens with a local tokenizer instead",
    );
  }
  const promptTokens = tokenIdList(body.prompt_token_ids, "prompt_token_ids");
  const tokens = contentChoiceTokens(body.choices, promptTokens, "vllm /v1/chat/completions");
  // Keep the text answer's choice order the same as the ids'.
  chat.choices.sort((a, b) => a.index - b.index);
  return { chat, tokens };
}

/**
 * `POST /inference/v1/generate`: `{"token_ids", "sampling_params"}`, `sampling_params` a vLLM
 * `SamplingParams` (`logprobs: 0` → the sampled token's logprob).
 */
export function buildVllmTokensGenerateRequest(
  request: TokenGenerationRequest,
  model: string,
): Record<string, unknown> {
  return {
    model,
    token_ids: request.inputIds,
    sampling_params: { ...vllmSamplingFields(resolveSampling(request)), logprobs: 0 },
  };
}

/**
 * `choices[i] = {index, token_ids, finish_reason, logprobs: {content: [{token:
 * "token_id:<id>", logprob}]}}`. Also reads the integer form proposed in vllm#58181
 * (`{token_id, logprob}` items, or the list without `content`).
 */
export function parseVllmTokensGenerateResponse(
  raw: unknown,
  promptTokens: number[],
): TokensAndLogprobs {
  const body = asRecord(raw, "vllm /inference/v1/generate");
  return contentChoiceTokens(body.choices, promptTokens, "vllm /inference/v1/generate");
}

/**
 * Ids, sampled logprobs and finish reasons of choices (in index order) whose logprobs are
 * `content` items and whose ids are `token_ids`: the shape of both vLLM's chat with
 * `return_token_ids` and its `/inference/v1/generate`.
 */
function contentChoiceTokens(
  rawChoices: unknown,
  promptTokens: number[],
  where: string,
): TokensAndLogprobs {
  const choices = asArray(rawChoices, `${where} choices`)
    .map((entry) => asRecord(entry, `${where} choice`))
    .sort((a, b) => Number(a.index ?? 0) - Number(b.index ?? 0));
  const result: TokensAndLogprobs = {
    promptTokens,
    outputTokens: [],
    outputLogprobs: [],
    finishReasons: [],
  };
  for (const choice of choices) {
    const content = logprobContent(choice.logprobs, where);
    const ids = idsOf(
      choice.token_ids,
      content.map((item) => itemTokenId(item)),
      where,
    );
    if (content.length !== ids.length) {
      throw new InferenceProtocolError(
        `${where}: ${ids.length} token ids but ${content.length} logprobs`,
      );
    }
    result.outputTokens.push(ids);
    result.outputLogprobs.push(
      content.map((item, i) => sampledLogprob(item.logprob, `logprobs.content[${i}].logprob`)),
    );
    result.finishReasons.push(flattenFinishReason(choice.finish_reason));
  }
  return result;
}

type LogprobItem = Record<string, unknown>;

/** `logprobs.content` (or a bare list of items); an error when logprobs are missing. */
function logprobContent(value: unknown, what: string): LogprobItem[] {
  if (value === null || value === undefined) {
    throw new InferenceMismatchError(`${what}: no logprobs in the answer although they were asked`);
  }
  const list = Array.isArray(value) ? value : asRecord(value, `${what} logprobs`).content;
  return asArray(list, `${what} logprobs.content`).map((item) =>
    asRecord(item, `${what} logprobs item`),
  );
}

function itemTokenId(item: LogprobItem): number | null {
  if (Number.isInteger(item.token_id)) return item.token_id as number;
  return placeholderTokenId(item.token);
}

/** The ids from `token_ids`, else from the placeholders; both must agree when both are there. */
function idsOf(tokenIds: unknown, placeholders: (number | null)[], what: string): number[] {
  const fromPlaceholders = placeholders.every((id) => id !== null)
    ? (placeholders as number[])
    : null;
  if (tokenIds !== undefined && tokenIds !== null) {
    const ids = tokenIdList(tokenIds, `${what} token_ids`);
    if (fromPlaceholders && fromPlaceholders.length > 0 && !sameIds(ids, fromPlaceholders)) {
      throw new InferenceProtocolError(`${what}: token_ids and the logprob tokens disagree`);
    }
    return ids;
  }
  if (fromPlaceholders) return fromPlaceholders;
  throw new InferenceMismatchError(`${what}: ${NO_IDS}`);
}

function checkPrompt(returned: unknown, sent: number[]): void {
  if (returned === undefined || returned === null) return;
  const ids = tokenIdList(returned, "prompt_token_ids");
  if (!sameIds(ids, sent)) {
    throw new InferenceMismatchError(
      `the server changed the prompt: it sent back ${ids.length} prompt ids for the ${sent.length} it was given`,
    );
  }
}
