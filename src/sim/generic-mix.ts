/**
 * Candidates for prompts no env registered and no built-in responder recognises: a mix of answer
 * shapes (boxed / tagged / bare numbers taken from the prompt, yes/no, prose) so that a reward
 * sees different answers and the toy policy can learn which shape it pays for.
 */
import type { SimCandidate } from "../env-sdk/simulate";

/** Weight-key namespace of the generic mix (the env is unknown to the simulator here). */
export const GENERIC_ENV = "_generic";

export function genericCandidates(promptText: string): SimCandidate[] {
  // The user's last turn: chat templates put the system prompt and earlier turns first.
  const numbers = (promptText.match(/-?\d+(?:\.\d+)?/g) ?? []).slice(-6).map(Number);
  const last = numbers.at(-1) ?? 0;
  const sum = numbers.reduce((a, b) => a + b, 0);
  const product = numbers.slice(-2).reduce((a, b) => a * b, 1);
  const n = (x: number) => String(Math.round(x * 1000) / 1000);
  return [
    { text: `The answer is \\boxed{${n(sum)}}.`, label: "boxed_sum" },
    { text: `The answer is \\boxed{${n(last)}}.`, label: "boxed_last_number" },
    { text: `The answer is \\boxed{${n(product)}}.`, label: "boxed_product" },
    { text: `<answer>${n(sum)}</answer>`, label: "tagged_sum" },
    { text: `<answer>${n(last)}</answer>`, label: "tagged_last_number" },
    { text: n(sum), label: "bare_sum" },
    { text: "Yes.", label: "yes" },
    { text: "No.", label: "no" },
    {
      text: "Let me think about this carefully. It depends on the details given above.",
      label: "prose",
    },
  ];
}
