/** Answers letter_counting prompts with a count in <answer> tags (off by one when "wrong"). */
import { LETTER_PROMPT_PREFIX } from "../../envs/letter-counting";
import type { Responder } from "./types";

const QUESTION = /the letter '(.)' appear in the string "([^"]*)"/g;

export const letterCountingResponder: Responder = {
  name: "letter_counting",
  matches: (promptText) => promptText.includes(LETTER_PROMPT_PREFIX),
  respond: (ctx) => {
    const last = [...ctx.promptText.matchAll(QUESTION)].at(-1);
    const letter = last?.[1] ?? "a";
    const text = last?.[2] ?? "";
    const count = [...text].filter((c) => c === letter).length;
    const correct = ctx.rng() < ctx.correctProbability;
    const answer = correct ? count : count + (ctx.rng() < 0.5 && count > 0 ? -1 : 1);
    return `I go through "${text}" one character at a time and count '${letter}'.\n<answer>${answer}</answer>`;
  },
};
