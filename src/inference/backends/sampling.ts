/**
 * Sampling values, always sent explicitly: a server fills what a request leaves out with its own
 * defaults (vLLM completions and TRL `max_tokens` 16, SGLang `max_new_tokens` 128, and vLLM the
 * model's generation_config.json for temperature/top_p/top_k/min_p/repetition_penalty), so a
 * request that omits them samples from a distribution nobody chose (docs/INFERENCE.md).
 */
import type { ChatCompletionParams, CompletionParams } from "../types";
import type { TokenGenerationRequest } from "./types";

/** What a request gets for a value the caller did not give (docs/INFERENCE.md lists them). */
export const SAMPLING_DEFAULTS = {
  max_tokens: 1024,
  temperature: 1.0,
  top_p: 1.0,
  /** -1 = the whole vocabulary; accepted by vLLM (old and new), SGLang and TRL. */
  top_k: -1,
  min_p: 0.0,
  repetition_penalty: 1.0,
} as const;

/** Every sampling value of a request, defaults filled in. */
export interface ResolvedSampling {
  n: number;
  maxTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  minP: number;
  repetitionPenalty: number;
  /** Sent only when given (the servers' default is none). */
  stop?: string[];
  /** Sent only when given (a fixed default seed would make every request identical). */
  seed?: number;
  /** Further parameters the caller passed, in vLLM/OpenAI spelling, sent as they are. */
  extra: Record<string, unknown>;
}

/** Keys resolveSampling takes out of `extra` (they are sent under each server's own name). */
const RESOLVED_KEYS = ["top_k", "min_p", "repetition_penalty", "seed", "stop", "n"];

const num = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined;

export function resolveSampling(request: TokenGenerationRequest): ResolvedSampling {
  const extra = { ...request.extra };
  const fromExtra = (key: string) => num(extra[key]);
  const topK = fromExtra("top_k");
  const minP = fromExtra("min_p");
  const repetitionPenalty = fromExtra("repetition_penalty");
  const seed = request.seed ?? fromExtra("seed");
  const stop = request.stop ?? stopList(extra.stop);
  for (const key of RESOLVED_KEYS) delete extra[key];
  for (const [key, value] of Object.entries(extra)) if (value === undefined) delete extra[key];
  return {
    n: request.n,
    maxTokens: request.maxTokens ?? SAMPLING_DEFAULTS.max_tokens,
    temperature: request.temperature ?? SAMPLING_DEFAULTS.temperature,
    topP: request.topP ?? SAMPLING_DEFAULTS.top_p,
    topK: topK ?? SAMPLING_DEFAULTS.top_k,
    minP: minP ?? SAMPLING_DEFAULTS.min_p,
    repetitionPenalty: repetitionPenalty ?? SAMPLING_DEFAULTS.repetition_penalty,
    ...(stop && stop.length > 0 ? { stop } : {}),
    ...(seed !== undefined ? { seed } : {}),
    extra,
  };
}

function stopList(value: unknown): string[] | undefined {
  if (typeof value === "string") return [value];
  if (Array.isArray(value) && value.every((s) => typeof s === "string")) return value;
  return undefined;
}

/**
 * vLLM `SamplingParams` names: the fields of `/v1/completions`, `/v1/chat/completions`, the
 * `sampling_params` of `/inference/v1/generate` and the body of Atropos' `/generate`.
 */
export function vllmSamplingFields(s: ResolvedSampling): Record<string, unknown> {
  return {
    ...s.extra,
    n: s.n,
    max_tokens: s.maxTokens,
    temperature: s.temperature,
    top_p: s.topP,
    top_k: s.topK,
    min_p: s.minP,
    repetition_penalty: s.repetitionPenalty,
    ...(s.stop ? { stop: s.stop } : {}),
    ...(s.seed !== undefined ? { seed: s.seed } : {}),
  };
}

/** SGLang `sampling_params` (python/sglang/srt/sampling/sampling_params.py). */
export function sglangSamplingParams(s: ResolvedSampling): Record<string, unknown> {
  return {
    ...s.extra,
    n: s.n,
    max_new_tokens: s.maxTokens,
    temperature: s.temperature,
    top_p: s.topP,
    top_k: s.topK,
    min_p: s.minP,
    repetition_penalty: s.repetitionPenalty,
    ...(s.stop ? { stop: s.stop } : {}),
    ...(s.seed !== undefined ? { sampling_seed: s.seed } : {}),
  };
}

/**
 * Defaults for a text call (chat/completions) to a vLLM or SGLang server: the same values,
 * filled in only where the caller gave none (`max_completion_tokens` counts as a max_tokens).
 */
export function withTextDefaults<P extends Record<string, unknown>>(params: P): P {
  const filled: Record<string, unknown> = { ...params };
  if (filled.max_tokens === undefined && filled.max_completion_tokens === undefined) {
    filled.max_tokens = SAMPLING_DEFAULTS.max_tokens;
  }
  for (const key of ["temperature", "top_p", "top_k", "min_p", "repetition_penalty"] as const) {
    if (filled[key] === undefined) filled[key] = SAMPLING_DEFAULTS[key];
  }
  return filled as P;
}

/** Fields of a token call that are the request's own, not extra sampling parameters. */
export const TOKEN_CALL_KEYS: ReadonlySet<string> = new Set([
  "prompt",
  "input_ids",
  "n",
  "max_tokens",
  "max_new_tokens",
  "max_completion_tokens",
  "temperature",
  "top_p",
  "stop",
  "seed",
  "split",
  "model",
  "logprobs",
]);

/** Fields of a chat or text call that are not sampling parameters (the rest go to the server). */
export const NON_SAMPLING_KEYS: ReadonlySet<string> = new Set([
  ...TOKEN_CALL_KEYS,
  "messages",
  "tools",
  "tool_choice",
  "tool_format",
  "enable_thinking",
  "chat_template_kwargs",
]);

/**
 * A token call from a text call's parameters: the fields it knows are mapped, every other
 * defined one (top_k, min_p, …) is an extra sampling parameter for the server. `ownKeys` are the
 * fields that are never extras.
 */
export function tokenRequestFrom(
  inputIds: number[],
  params: ChatCompletionParams | CompletionParams,
  ownKeys: ReadonlySet<string> = NON_SAMPLING_KEYS,
): TokenGenerationRequest {
  const extra = Object.fromEntries(
    Object.entries(params).filter(([key, value]) => value !== undefined && !ownKeys.has(key)),
  );
  const maxTokens = params.max_tokens ?? params.max_completion_tokens ?? params.max_new_tokens;
  return {
    inputIds,
    n: params.n ?? 1,
    maxTokens: typeof maxTokens === "number" ? maxTokens : undefined,
    temperature: params.temperature,
    topP: params.top_p,
    stop: params.stop,
    seed: params.seed,
    extra,
  };
}
