import { seededRng } from "../core/codecs/rng";
import type { ToolFormatName } from "../core/tool-calls/format";
import { toolFormatFor } from "../inference/tool-calls";
import type { Tokenizer } from "../inference/types";
import { GENERIC_ENV, genericCandidates } from "./generic-mix";
import type { PolicyChoice, ToyPolicy } from "./policy";
import { splitLogprob } from "./policy";
import { respond, responderFor } from "./responders/index";
import { nativeToolCalls } from "./tool-text";

export interface GenerationSettings {
  seed: number;
  correctProbability: number;
}

export interface GenerationRequest {
  promptText: string;
  choiceIndex: number;
  requestSeed: number;
  maxTokens: number;
  stop?: string[];
  /** The prompt's token ids when the request carried them (identifies the sample for trainers). */
  promptIds?: number[];
  /** Sampling temperature for the toy policy (0 = greedy); scripted responders ignore it. */
  temperature?: number;
  /** How tool calls are written (default: the tokenizer family's format). */
  toolFormat?: ToolFormatName;
}

export interface GeneratedChoice {
  /** Sampled ids (ends with EOS when finished naturally). */
  tokens: number[];
  /**
   * Toy policy: log π(answer) split evenly over the answer's tokens. Scripted responders: one
   * deterministic negative number per token (no policy behind them).
   */
  logprobs: number[];
  finishReason: "stop" | "length";
  responder: string;
  /** The visible text when the generator trimmed it (a stop string); else decoded from tokens. */
  text?: string;
}

/**
 * One simulated answer. The text comes from the toy policy (src/sim/policy.ts) when an env
 * registered candidates for this prompt or no scripted responder knows it (the generic mix),
 * else from the scripted responders. Tokens = the real tokenizer's encoding of that text + EOS,
 * truncated to max_tokens ("length"). Same inputs and weights → same outputs.
 */
export function generateChoice(
  tokenizer: Tokenizer,
  settings: GenerationSettings,
  request: GenerationRequest,
  policy: ToyPolicy | null = null,
): GeneratedChoice {
  const rng = seededRng(
    settings.seed,
    request.promptText,
    request.choiceIndex,
    request.requestSeed,
  );
  let choice: PolicyChoice | null = null;
  let responder: string;
  let text: string;
  const registered = policy?.candidatesFor(request.promptText) ?? null;
  if (policy && (registered || responderFor(request.promptText).name === "fallback")) {
    const env = registered?.env ?? GENERIC_ENV;
    const candidates = registered?.candidates ?? genericCandidates(request.promptText);
    choice = policy.choose(env, candidates, rng(), request.temperature ?? 1);
    responder = `policy:${env}`;
    text = choice.text;
  } else {
    const answer = respond({
      promptText: request.promptText,
      rng,
      correctProbability: settings.correctProbability,
    });
    responder = answer.responder;
    text = answer.text;
  }
  text = nativeToolCalls(text, toolFormatFor(tokenizer.name, request.toolFormat), rng);
  let stoppedByString = false;
  for (const stop of request.stop ?? []) {
    const at = stop ? text.indexOf(stop) : -1;
    if (at >= 0) {
      text = text.slice(0, at);
      stoppedByString = true;
    }
  }
  const body = tokenizer.encode(text, { addSpecialTokens: false });
  const full = stoppedByString ? body : [...body, tokenizer.eosTokenId];
  const maxTokens = Math.max(0, request.maxTokens);
  const tokens = full.slice(0, maxTokens);
  let logprobs: number[];
  if (choice && policy) {
    logprobs = splitLogprob(choice.logprob, full.length).slice(0, tokens.length);
    const promptIds =
      request.promptIds ?? tokenizer.encode(request.promptText, { addSpecialTokens: false });
    policy.logSample(promptIds, tokens, choice);
  } else {
    const logprobRng = seededRng(
      settings.seed,
      "logprobs",
      request.promptText,
      request.choiceIndex,
      request.requestSeed,
    );
    logprobs = tokens.map(() => -Math.round((0.001 + logprobRng() * 3) * 1e6) / 1e6);
  }
  return {
    tokens,
    logprobs,
    finishReason: tokens.length < full.length ? "length" : "stop",
    responder,
  };
}
