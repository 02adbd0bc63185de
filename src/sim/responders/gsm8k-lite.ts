/** Answers gsm8k_lite prompts: reasoning + \boxed{N}; right with probability correctProbability. */
import { GSM8K_LITE_JSONL } from "../../envs/data/gsm8k-lite-jsonl";
import { GSM8K_PROBLEM_PREFIX, parseGsm8kJsonl } from "../../envs/gsm8k-lite";
import type { Responder } from "./types";

let goldByQuestion: Map<string, string> | null = null;
function gold(question: string): string | null {
  goldByQuestion ??= new Map(parseGsm8kJsonl(GSM8K_LITE_JSONL).map((p) => [p.question, p.gold]));
  return goldByQuestion.get(question) ?? null;
}

/** The last problem in the prompt (multi-turn prompts repeat earlier ones). */
export function extractProblem(promptText: string): string | null {
  const at = promptText.lastIndexOf(GSM8K_PROBLEM_PREFIX);
  if (at < 0) return null;
  const rest = promptText.slice(at + GSM8K_PROBLEM_PREFIX.length);
  return rest.split(/<\||\n/)[0]!.trim();
}

export const gsm8kLiteResponder: Responder = {
  name: "gsm8k_lite",
  matches: (promptText) => promptText.includes(GSM8K_PROBLEM_PREFIX),
  respond: (ctx) => {
    const problem = extractProblem(ctx.promptText) ?? "";
    const known = gold(problem);
    // Unknown problems (custom datasets): answer with the sum of the numbers in the question.
    const right =
      known ?? String((problem.match(/\d+/g) ?? []).map(Number).reduce((a, b) => a + b, 0));
    const correct = ctx.rng() < ctx.correctProbability;
    const wrong = String(Number(right) + 1 + Math.floor(ctx.rng() * 9));
    const answer = correct ? right : wrong;
    const padding = " Let me double-check the arithmetic.".repeat(Math.floor(ctx.rng() * 3));
    return `Let me work through the problem step by step.${padding} The result is ${answer}.\n\\boxed{${answer}}`;
  },
};
