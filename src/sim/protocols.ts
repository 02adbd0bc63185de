import { errorMessage } from "../core/errors";
import type { ToolCallFormat, ToolFormatName } from "../core/tool-calls/format";
import type { ChatMessage } from "../core/wire/group-types";
import { parseToolCalls, requestedToolFormat, toolFormatFor } from "../inference/tool-calls";
import type { Tokenizer, ToolDefinition } from "../inference/types";
import type { GeneratedChoice } from "./generator";

/** A parsed request body; every handler validates what it reads. */
export type Body = Record<string, unknown>;

export class BadRequest extends Error {}

/** One generation request as every wire format asks it: n choices for one prompt. */
export interface Sampling {
  n: number;
  /** The request's `seed`; undefined = unseeded (each request differs). */
  seed: number | undefined;
  maxTokens: number;
  stop: string[] | undefined;
  temperature?: number;
  topP?: number;
  /** undefined = no top-k cut (vLLM's -1). */
  topK?: number;
  minP?: number;
  /** The prompt's token ids when the request carried them (or the server tokenized them). */
  promptIds?: number[];
  /** How tool calls are written (default: the tokenizer family's format). */
  toolFormat?: ToolFormatName;
}

/**
 * What the wire code needs from whatever generates: the simulator's scripted answers and toy
 * policy (src/sim/server.ts) or a real model (src/engine). The routes are written once, here.
 */
export interface ProtocolContext {
  tokenizer: Tokenizer;
  model: string;
  maxTokensDefault: number;
  generate(promptText: string, sampling: Sampling): GeneratedChoice[] | Promise<GeneratedChoice[]>;
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

function seedOf(seed: unknown): number | undefined {
  return seed === undefined || seed === null ? undefined : int(seed, 0, "seed");
}

function temperatureOf(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0)
    throw new BadRequest(`${name} must be a non-negative number`);
  return value;
}

function probability(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > 1)
    throw new BadRequest(`${name} must be a number between 0 and 1`);
  return value;
}

/** vLLM's top_k: -1 (or 0) turns the cut off. */
function topKOf(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null || value === -1 || value === 0) return undefined;
  return int(value, 0, name);
}

/** The sampling knobs every format spells the same way (vLLM's SamplingParams names). */
function knobs(body: Body, prefix = ""): Pick<Sampling, "temperature" | "topP" | "topK" | "minP"> {
  return {
    temperature: temperatureOf(body.temperature, `${prefix}temperature`),
    topP: probability(body.top_p, `${prefix}top_p`),
    topK: topKOf(body.top_k, `${prefix}top_k`),
    minP: probability(body.min_p, `${prefix}min_p`),
  };
}

async function generateMany(
  ctx: ProtocolContext,
  promptText: string,
  s: Sampling,
): Promise<GeneratedChoice[]> {
  if (s.n < 1 || s.n > 128) throw new BadRequest("n must be between 1 and 128");
  return ctx.generate(promptText, s);
}

/** The text of a choice without its EOS, as OpenAI-compatible servers return it. */
function visibleText(ctx: ProtocolContext, choice: GeneratedChoice): string {
  if (choice.text !== undefined) return choice.text;
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
export async function chatCompletions(ctx: ProtocolContext, body: Body): Promise<Body> {
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw new BadRequest("messages must be a non-empty list");
  const tools = Array.isArray(body.tools) ? (body.tools as ToolDefinition[]) : undefined;
  const kwargs = (body.chat_template_kwargs ?? {}) as { enable_thinking?: unknown };
  let format: ToolCallFormat;
  try {
    format = toolFormatFor(ctx.tokenizer.name, requestedToolFormat(body.tool_format));
  } catch (error) {
    throw new BadRequest(errorMessage(error));
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
  const choices = await generateMany(ctx, prompt, {
    n: int(body.n, 1, "n"),
    seed: seedOf(body.seed),
    maxTokens,
    stop: stops(body.stop),
    ...knobs(body),
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
export async function completions(ctx: ProtocolContext, body: Body): Promise<Body> {
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
  const choices = await generateMany(ctx, promptText, {
    n: int(body.n, 1, "n"),
    seed: seedOf(body.seed),
    maxTokens,
    stop: stops(body.stop),
    ...knobs(body),
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
export async function vllmGenerate(ctx: ProtocolContext, body: Body): Promise<Body> {
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
  const choices = await generateMany(ctx, promptText, {
    n: int(body.n, 1, "n"),
    seed: seedOf(body.seed),
    maxTokens,
    stop: stops(body.stop),
    ...knobs(body),
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
export async function sglangGenerate(ctx: ProtocolContext, body: Body): Promise<Body | Body[]> {
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
  const choices = await generateMany(ctx, promptText, {
    n,
    seed: seedOf(sampling.sampling_seed ?? sampling.seed),
    maxTokens,
    stop: stops(sampling.stop),
    ...knobs(sampling, "sampling_params."),
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
export async function vllmTokensGenerate(ctx: ProtocolContext, body: Body): Promise<Body> {
  const ids = tokenIds(body.token_ids, "token_ids");
  if (!ids) throw new BadRequest("token_ids must be a list of token ids");
  const sampling = body.sampling_params;
  if (!sampling || typeof sampling !== "object" || Array.isArray(sampling))
    throw new BadRequest("sampling_params is required (a SamplingParams object)");
  const params = sampling as Body;
  const choices = await generateMany(ctx, ctx.tokenizer.decode(ids), {
    n: int(params.n, 1, "sampling_params.n"),
    seed: seedOf(params.seed),
    // SamplingParams' own default, which the older endpoint applied as it was.
    maxTokens: int(params.max_tokens, 16, "sampling_params.max_tokens"),
    stop: stops(params.stop),
    ...knobs(params, "sampling_params."),
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
export async function trlGenerate(ctx: ProtocolContext, body: Body): Promise<Body> {
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
    for (const choice of await generateMany(ctx, ctx.tokenizer.decode(ids), {
      n,
      seed: seedOf(kwargs.seed),
      maxTokens,
      stop: stops(kwargs.stop),
      ...knobs(body),
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
