/**
 * Two roles for the llm_judge env: the policy (good answers with "Key points:" with probability
 * correctProbability, vague ones otherwise) and the judges (reply "Score: N", high for answers with
 * key points, low for vague ones, with a little deterministic noise).
 */
import { JUDGE_MARKER, POLICY_QUESTION_PREFIX } from "../../envs/llm-judge";
import type { Responder } from "./types";

export const judgeResponder: Responder = {
  name: "llm_judge_judge",
  matches: (promptText) => promptText.includes(JUDGE_MARKER),
  respond: (ctx) => {
    const response = ctx.promptText.slice(ctx.promptText.lastIndexOf("[Response]"));
    const good = response.includes("Key points:");
    const base = good ? 7 : 2;
    const score = Math.min(10, base + Math.floor(ctx.rng() * 4));
    return `The response is ${good ? "clear and complete" : "vague"}.\nScore: ${score}`;
  },
};

export const judgedPolicyResponder: Responder = {
  name: "llm_judge_policy",
  matches: (promptText) =>
    promptText.includes(POLICY_QUESTION_PREFIX) && !promptText.includes(JUDGE_MARKER),
  respond: (ctx) => {
    const at = ctx.promptText.lastIndexOf(POLICY_QUESTION_PREFIX);
    const question = ctx.promptText
      .slice(at + POLICY_QUESTION_PREFIX.length)
      .split(/<\||\n/)[0]!
      .trim();
    if (ctx.rng() < ctx.correctProbability) {
      return `Here is a direct answer to "${question}". Key points: the main cause, how it works, and a short example.`;
    }
    return "It depends on many things, hard to say.";
  },
};
