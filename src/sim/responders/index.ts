import { blackjackResponder } from "./blackjack";
import { gsm8kLiteResponder } from "./gsm8k-lite";
import { letterCountingResponder } from "./letter-counting";
import { judgedPolicyResponder, judgeResponder } from "./llm-judge";
import { toolUseResponder } from "./tool-use";
import { trajectoryJudgeResponder } from "./trajectory-judge";
import type { Responder, ResponderContext } from "./types";

/** Fallback: a short, deterministic, plausible answer. */
const fallback: Responder = {
  name: "fallback",
  matches: () => true,
  respond: (ctx) => {
    const words = ["The", "answer", "depends", "on", "the", "question", "above", "."];
    const n = 3 + Math.floor(ctx.rng() * words.length);
    return words.slice(0, Math.min(n, words.length)).join(" ");
  },
};

/** Ordered: the first responder whose `matches` is true answers. Env-specific ones go first. */
export const responders: Responder[] = [
  // Judge prompts quote policy answers, so they must be recognised before the others.
  trajectoryJudgeResponder,
  judgeResponder,
  judgedPolicyResponder,
  toolUseResponder,
  gsm8kLiteResponder,
  letterCountingResponder,
  blackjackResponder,
  fallback,
];

export function responderFor(promptText: string): Responder {
  return responders.find((r) => r.matches(promptText)) ?? fallback;
}

export function respond(ctx: ResponderContext): { responder: string; text: string } {
  const responder = responderFor(ctx.promptText);
  return { responder: responder.name, text: responder.respond(ctx) };
}
