/** How agent_tasks reads an answer: the <answer> part, the code block, a reference match. */
import { answersEquivalent } from "../sdk/env";

/** The final answer: the <answer> content if any, else the whole response. */
export function finalAnswerOf(response: string): string {
  return (/<answer>\s*([\s\S]*?)\s*<\/answer>/i.exec(response)?.[1] ?? response).trim();
}

/** The last fenced code block of a response, else the response itself. */
export function codeOf(response: string): string {
  const blocks = [...response.matchAll(/```[A-Za-z0-9_+-]*\n([\s\S]*?)```/g)];
  return (blocks.at(-1)?.[1] ?? response).trim();
}

export function referenceScore(
  response: string,
  evaluation: { answer: string; match: "exact" | "contains" | "numeric" },
): number {
  const answer = finalAnswerOf(response);
  const gold = evaluation.answer.trim();
  if (evaluation.match === "contains")
    return response.toLowerCase().includes(gold.toLowerCase()) ? 1 : 0;
  if (evaluation.match === "numeric") return answersEquivalent(answer, gold) ? 1 : 0;
  return answer.toLowerCase() === gold.toLowerCase() ? 1 : 0;
}
