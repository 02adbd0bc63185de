import type { ChatMessage } from "../core/group-types";
import type { ToolCallFormat, ToolFormatName } from "../core/tool-calls/format";
import {
  parseToolCalls,
  requestedToolFormat,
  toolFormatFor,
} from "../env-workers/inference/tool-calls";
import type { Tokenizer, ToolDefinition } from "../env-workers/inference/types";
import { type GeneratedChoice, type GenerationSettings, generateChoice } from "./generator";
import type { ToyPolicy } from "./policy";

/** A parsed request body; every handler validates what it reads. */
export type Body = Record<string, unknown>;

export class BadRequest extends Error {}

export interface ProtocolContext {
  tokenizer: Tokenizer;
  settings: GenerationSettings;
  model: string;
  maxTokensDefault: number;
  /** The toy policy answering registered prompts and the generic mix. */
  policy: ToyPolicy | null;
  /** Counts generated tokens and choices for stats(). */
  record(choices: GeneratedChoice[]): void;
}

function int(value: unknown, fallback: number, name: string): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new BadRequest(`${name} must be a non-negative integer`);
  }
  return value;
}

function stops(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return [value];
  if (Array.isArray(value) && value.every((s) => typeof s === "string")) return value as string[];
  throw new BadRequest("stop must be a string or a list of strings");
}

function tokenIds(value: unknown, name: string): number[] | null {
  if (!Array.isArray(value)) return null;
  if (!value.every((id) => Number.isInteger(id) && id >= 0))
    throw new BadRequest(`${name}: token ids must be integers`);
  return value as number[];
}

// Like a real sampler, unseeded requests differ from each other (deterministically, in arrival
// order); an explicit `seed` reproduces its output exactly.
let unseededRequests = 0;
function requestSeedOf(seed: unknown): number {
  if (seed === undefined || seed === null) return 0x40000000 + unseededRequests++;
  return int(seed, 0, "seed");
}

function temperatureOf(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0)
    throw new BadRequest(`${name} must be a non-negative number`);
  return value;
}

interface Sampling {
  n: number;
  requestSeed: number;
  maxTokens: number;
  stop: string[] | undefined;
  temperature?: number;
  promptIds?: number[];
  toolFormat?: ToolFormatName;
}

function generateMany(ctx: ProtocolContext, promptText: string, s: Sampling): GeneratedChoice[] {
  if (s.n < 1 || s.n > 128) throw new BadRequest("n must be between 1 and 128");
  const choices = Array.from({ length: s.n }, (_, choiceIndex) =>
    generateChoice(
      ctx.tokenizer,
      ctx.settings,
      {
        promptText,
        choiceIndex,
        requestSeed: s.requestSeed,
        maxTokens: s.maxTokens,
        stop: s.stop,
        temperature: s.temperature,
        promptIds: s.promptIds,
        toolFormat: s.toolFormat,
      },
      ctx.policy,
    ),
  );
  ctx.record(choices);
  return choices;
}

/** The text of a choice without its EOS, as OpenAI-compatible servers return it. */
function visibleText(ctx: ProtocolContext, choice: GeneratedChoice): string {
  const stopIds = ctx.tokenizer.stopTokenIds ?? [ctx.tokenizer.eosTokenId];
  const ids =
    choice.tokens.at(-1) !== undefined && stopIds.includes(choice.tokens.at(-1) as number)
      ? choice.tokens.slice(0, -1)
      : choice.tokens;
  return ctx.tokenizer.decode(ids, { skipSpecialTokens: true });
}

function created(): number {
  return Math.floor(Date.now() / 1000);
}

function usage(promptTokens: number, choices: GeneratedChoice[]) {
  const completion = choices.reduce((sum, c) => sum + c.tokens.length, 0);
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completion,
    total_tokens: promptTokens + completion,
  };
}

/**
 * OpenAI POST /v1/chat/completions; tool calls are written and parsed in the tokenizer family's
 * format (or the request's `tool_format`), like vLLM's --tool-call-parser for that family.
 */
export function chatCompletions(ctx: ProtocolContext, body: Body): Body {
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw new BadRequest("messages must be a non-empty list");
  const tools = Array.isArray(body.tools) ? (body.tools as ToolDefinition[]) : undefined;
  const kwargs = (body.chat_template_kwargs ?? {}) as { enable_thinking?: unknown };
  let format: ToolCallFormat;
  try {
    format = toolFormatFor(ctx.tokenizer.name, requestedToolFormat(body.tool_format));
  } catch (error) {
    throw new BadRequest(error instanceof Error ? error.message : String(error));
  }
  const prompt = ctx.tokenizer.applyChatTemplate(body.messages as ChatMessage[], {
    addGenerationPrompt: true,
    toolFormat: format.name,
    tools,
    enableThinking:
      typeof kwargs.enable_thinking === "boolean" ? kwargs.enable_thinking : undefined,
  });
  const promptTokens = ctx.tokenizer.encode(prompt, { addSpecialTokens: true });
  const maxTokens = int(
    body.max_tokens ?? body.max_completion_tokens,
    ctx.maxTokensDefault,
    "max_tokens",
  );
  const choices = generateMany(ctx, prompt, {
    n: int(body.n, 1, "n"),
    requestSeed: requestSeedOf(body.seed),
    maxTokens,
    stop: stops(body.stop),
    temperature: temperatureOf(body.temperature, "temperature"),
    promptIds: promptTokens,
    toolFormat: format.name,
  });
  const wantLogprobs = body.logprobs === true;
  const asIds = body.return_tokens_as_token_ids === true;
  const returnIds = body.return_token_ids === true;
  return {
    id: `chatcmpl-sim-${Date.now().toString(36)}`,
    object: "chat.completion",
    created: created(),
    model: ctx.model,
    choices: choices.map((choice, index) => {
      const text = visibleText(ctx, choice);
      const calls = tools && body.tool_choice !== "none" ? parseToolCalls(text, format) : null;
      return {
        index,
        message: calls
          ? { role: "assistant", content: calls.content, tool_calls: calls.toolCalls }
          : { role: "assistant", content: text },
        finish_reason: calls ? "tool_calls" : choice.finishReason,
        logprobs: wantLogprobs
          ? {
              content: choice.tokens.map((id, i) => ({
                token: asIds ? `token_id:${id}` : ctx.tokenizer.decode([id]),
                logprob: choice.logprobs[i],
                bytes: null,
                top_logprobs: [],
              })),
            }
          : null,
        ...(returnIds ? { token_ids: choice.tokens } : {}),
      };
    }),
    usage: usage(promptTokens.length, choices),
    // vLLM puts the chat's prompt ids on the response, not on the choices.
    ...(returnIds ? { prompt_token_ids: promptTokens } : {}),
  };
}

/** OpenAI POST /v1/completions; prompt may be text or token ids (vLLM extension). */
export function completions(ctx: ProtocolContext, body: Body): Body {
  const ids = tokenIds(body.prompt, "prompt");
  let promptText: string;
  let promptLength: number;
  if (ids) {
    promptText = ctx.tokenizer.decode(ids);
    promptLength = ids.length;
  } else if (typeof body.prompt === "string") {
    promptText = body.prompt;
    promptLength = ctx.tokenizer.encode(promptText).length;
  } else {
    throw new BadRequest("prompt must be a string or a list of token ids");
  }
  const wantLogprobs = body.logprobs !== undefined && body.logprobs !== null;
  const topK = wantLogprobs ? int(body.logprobs, 0, "logprobs") : 0;
  const asIds = body.return_tokens_as_token_ids === true;
  const returnIds = body.return_token_ids === true;
  const maxTokens = int(body.max_tokens, ctx.maxTokensDefault, "max_tokens");
  const choices = generateMany(ctx, promptText, {
    n: int(body.n, 1, "n"),
    requestSeed: requestSeedOf(body.seed),
    maxTokens,
    stop: stops(body.stop),
    temperature: temperatureOf(body.temperature, "temperature"),
    promptIds: ids ?? undefined,
  });
  return {
    id: `cmpl-sim-${Date.now().toString(36)}`,
    object: "text_completion",
    created: created(),
    model: ctx.model,
    choices: choices.map((choice, index) => {
      const tokenStrings = choice.tokens.map((id) =>
        asIds ? `token_id:${id}` : ctx.tokenizer.decode([id]),
      );
      return {
        index,
        text: visibleText(ctx, choice),
        finish_reason: choice.finishReason,
        logprobs: wantLogprobs
          ? {
              tokens: tokenStrings,
              token_logprobs: choice.logprobs,
              top_logprobs:
                topK > 0 ? tokenStrings.map((token, i) => ({ [token]: choice.logprobs[i] })) : null,
              text_offset: [],
            }
          : null,
        // vLLM ≥ 0.10.2 with return_token_ids: the ids per choice.
        ...(returnIds
          ? {
              token_ids: choice.tokens,
              prompt_token_ids: ids ?? ctx.tokenizer.encode(promptText),
            }
          : {}),
      };
    }),
    usage: usage(promptLength, choices),
  };
}

/** Atropos' custom vLLM `/generate` (docs/INFERENCE.md). */
export function vllmGenerate(ctx: ProtocolContext, body: Body): Body {
  const prompt = body.prompt;
  let promptText: string;
  let promptIds: number[];
  if (typeof prompt === "string") {
    promptText = prompt;
    promptIds = ctx.tokenizer.encode(prompt);
  } else if (prompt && typeof prompt === "object" && !Array.isArray(prompt)) {
    const ids = tokenIds((prompt as Body).prompt_token_ids, "prompt.prompt_token_ids");
    if (!ids) throw new BadRequest("prompt.prompt_token_ids must be a list of token ids");
    promptIds = ids;
    promptText = ctx.tokenizer.decode(ids);
  } else {
    throw new BadRequest("prompt is required (a string or {prompt_token_ids})");
  }
  const maxTokens = int(body.max_tokens, ctx.maxTokensDefault, "max_tokens");
  const choices = generateMany(ctx, promptText, {
    n: int(body.n, 1, "n"),
    requestSeed: requestSeedOf(body.seed),
    maxTokens,
    stop: stops(body.stop),
    temperature: temperatureOf(body.temperature, "temperature"),
    promptIds,
  });
  const response: Body = {
    text: choices.map((c) => ctx.tokenizer.decode(c.tokens, { skipSpecialTokens: true })),
    prompt: promptText,
    finish_reasons: choices.map((c) => c.finishReason),
  };
  if (body.logprobs !== undefined && body.logprobs !== null) {
    response.logprobs = choices.map((c) =>
      c.tokens.map((id, i) => [{ [String(id)]: c.logprobs[i] }]),
    );
    response.prompt_token_ids = promptIds;
    response.token_ids = choices.map((c) => c.tokens);
  }
  return response;
}

/** SGLang native `/generate`: one object per choice (a list when n > 1). */
export function sglangGenerate(ctx: ProtocolContext, body: Body): Body | Body[] {
  const ids = tokenIds(body.input_ids, "input_ids");
  let promptText: string;
  if (ids) promptText = ctx.tokenizer.decode(ids);
  else if (typeof body.text === "string") promptText = body.text;
  else throw new BadRequest("input_ids or text is required");
  const sampling = (body.sampling_params ?? {}) as Body;
  const n = int(sampling.n, 1, "sampling_params.n");
  const maxTokens = int(
    sampling.max_new_tokens,
    ctx.maxTokensDefault,
    "sampling_params.max_new_tokens",
  );
  const choices = generateMany(ctx, promptText, {
    n,
    requestSeed: requestSeedOf(sampling.sampling_seed ?? sampling.seed),
    maxTokens,
    stop: stops(sampling.stop),
    temperature: temperatureOf(sampling.temperature, "sampling_params.temperature"),
    promptIds: ids ?? undefined,
  });
  const promptLength = ids ? ids.length : ctx.tokenizer.encode(promptText).length;
  const items = choices.map((c) => ({
    text: ctx.tokenizer.decode(c.tokens, { skipSpecialTokens: true }),
    output_ids: c.tokens,
    meta_info: {
      prompt_tokens: promptLength,
      completion_tokens: c.tokens.length,
      finish_reason:
        c.finishReason === "length"
          ? { type: "length", length: c.tokens.length }
          : { type: "stop", matched: c.tokens.at(-1) ?? null },
      ...(body.return_logprob === true
        ? { output_token_logprobs: c.tokens.map((id, i) => [c.logprobs[i], id, null]) }
        : {}),
    },
  }));
  return n === 1 ? (items[0] as Body) : items;
}

/**
 * vLLM's token-in/token-out `POST /inference/v1/generate`: `{token_ids, sampling_params}` →
 * `choices[{index, token_ids, finish_reason, logprobs: {content: [{token: "token_id:<id>",
 * logprob}]}}]` (vllm/entrypoints/serve/disagg).
 */
export function vllmTokensGenerate(ctx: ProtocolContext, body: Body): Body {
  const ids = tokenIds(body.token_ids, "token_ids");
  if (!ids) throw new BadRequest("token_ids must be a list of token ids");
  const sampling = body.sampling_params;
  if (!sampling || typeof sampling !== "object" || Array.isArray(sampling))
    throw new BadRequest("sampling_params is required (a SamplingParams object)");
  const params = sampling as Body;
  const choices = generateMany(ctx, ctx.tokenizer.decode(ids), {
    n: int(params.n, 1, "sampling_params.n"),
    requestSeed: requestSeedOf(params.seed),
    // SamplingParams' own default, which the older endpoint applied as it was.
    maxTokens: int(params.max_tokens, 16, "sampling_params.max_tokens"),
    stop: stops(params.stop),
    temperature: temperatureOf(params.temperature, "sampling_params.temperature"),
    promptIds: ids,
  });
  const wantLogprobs = params.logprobs !== undefined && params.logprobs !== null;
  return {
    request_id: `generate-tokens-sim-${Date.now().toString(36)}`,
    choices: choices.map((c, index) => ({
      index,
      token_ids: c.tokens,
      finish_reason: c.finishReason,
      logprobs: wantLogprobs
        ? {
            content: c.tokens.map((id, i) => ({
              token: `token_id:${id}`,
              logprob: c.logprobs[i],
              bytes: null,
              top_logprobs: [],
            })),
          }
        : null,
    })),
    prompt_logprobs: null,
    kv_transfer_params: null,
  };
}

/**
 * TRL vllm-serve `POST /generate/` (trl ≥ 1.0): text or token-id prompts in; `prompt_ids`,
 * `completion_ids` (prompt-major, n per prompt) and, unless `logprobs` is null, the sampled
 * tokens' logprobs with their ids (one entry per position with `logprobs: 0`).
 */
export function trlGenerate(ctx: ProtocolContext, body: Body): Body {
  const prompts = body.prompts;
  if (
    !Array.isArray(prompts) ||
    !(
      prompts.every((p) => typeof p === "string") ||
      prompts.every((p) => Array.isArray(p) && p.every((id) => Number.isInteger(id) && id >= 0))
    )
  ) {
    throw new BadRequest("prompts must be a list of strings or a list of token-id lists");
  }
  const n = int(body.n, 1, "n");
  const maxTokens = int(body.max_tokens, 16, "max_tokens"); // TRL's GenerateRequest default
  const kwargs = (body.generation_kwargs ?? {}) as Body;
  const logprobs = body.logprobs === undefined ? 0 : body.logprobs;
  const promptIds: number[][] = [];
  const completionIds: number[][] = [];
  const completionLogprobs: number[][][] = [];
  for (const prompt of prompts as (string | number[])[]) {
    const ids = typeof prompt === "string" ? ctx.tokenizer.encode(prompt) : prompt;
    promptIds.push(ids);
    for (const choice of generateMany(ctx, ctx.tokenizer.decode(ids), {
      n,
      requestSeed: requestSeedOf(kwargs.seed),
      maxTokens,
      stop: stops(kwargs.stop),
      temperature: temperatureOf(body.temperature, "temperature"),
      promptIds: ids,
    })) {
      completionIds.push(choice.tokens);
      completionLogprobs.push(choice.logprobs.map((lp) => [lp]));
    }
  }
  const withLogprobs = logprobs !== null;
  return {
    prompt_ids: promptIds,
    completion_ids: completionIds,
    logprobs: withLogprobs ? completionLogprobs : null,
    logprob_token_ids: withLogprobs ? completionIds.map((ids) => ids.map((id) => [id])) : null,
  };
}
