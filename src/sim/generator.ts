import { seededRng } from "../core/rng";
import type { Tokenizer } from "../env-workers/inference/types";
import { respond } from "./responders/index";

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
}

export interface GeneratedChoice {
  /** Sampled ids (ends with EOS when finished naturally). */
  tokens: number[];
  /** One deterministic negative logprob per token. */
  logprobs: number[];
  finishReason: "stop" | "length";
  responder: string;
}

/**
 * The simulated policy: text from the responders, tokens = the real tokenizer's encoding of
 * that text + EOS, truncated to max_tokens ("length"). Same inputs → same outputs.
 */
export function generateChoice(
  tokenizer: Tokenizer,
  settings: GenerationSettings,
  request: GenerationRequest,
): GeneratedChoice {
  const rng = seededRng(
    settings.seed,
    request.promptText,
    request.choiceIndex,
    request.requestSeed,
  );
  const answer = respond({
    promptText: request.promptText,
    rng,
    correctProbability: settings.correctProbability,
  });
  let text = answer.text;
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
  const logprobRng = seededRng(
    settings.seed,
    "logprobs",
    request.promptText,
    request.choiceIndex,
    request.requestSeed,
  );
  const logprobs = tokens.map(() => -Math.round((0.001 + logprobRng() * 3) * 1e6) / 1e6);
  return {
    tokens,
    logprobs,
    finishReason: tokens.length < full.length ? "length" : "stop",
    responder: answer.responder,
  };
}
