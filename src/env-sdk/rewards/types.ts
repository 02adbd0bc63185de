/**
 * Reward function contract. A reward scores a batch of completions (usually one group) and gets
 * the item's reference data (solution, ground_truth, lengths…) in `context`.
 */
import type { ChatMessage } from "../../core/wire/group-types";

/** Anything Atropos accepts as a completion: text, a message, a choice, or a message list. */
export type Completion = string | ChatMessage | { message: ChatMessage } | ChatMessage[];

export type RewardContext = Record<string, unknown>;

export interface RewardFunction {
  readonly name: string;
  /** Applied by `weightedScores` and by CombinedReward; `compute` returns unweighted values. */
  readonly weight: number;
  compute(completions: Completion[], context?: RewardContext): number[];
}

/** Text of a completion (first assistant message for a message list; "" when none). */
export function getContent(completion: Completion): string {
  if (typeof completion === "string") return completion;
  if (Array.isArray(completion)) {
    const assistant = completion.find((m) => m.role === "assistant");
    return assistant ? contentText(assistant.content) : "";
  }
  if ("message" in completion && completion.message && typeof completion.message === "object") {
    return contentText((completion.message as ChatMessage).content);
  }
  return contentText((completion as ChatMessage).content);
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) =>
        part && typeof part === "object" && typeof (part as { text?: unknown }).text === "string"
          ? (part as { text: string }).text
          : "",
      )
      .join("");
  }
  return "";
}

/** weight × compute; a throwing reward yields zeros instead of failing the group. */
export function weightedScores(
  fn: RewardFunction,
  completions: Completion[],
  context: RewardContext = {},
): number[] {
  try {
    return fn.compute(completions, context).map((v) => v * fn.weight);
  } catch {
    return completions.map(() => 0);
  }
}

/** Per-completion value of a context field that may be a scalar or a per-completion list. */
export function perCompletion<T>(value: T | T[] | undefined, index: number): T | undefined {
  return Array.isArray(value) ? value[index] : value;
}

/** Text after the last </think> (the visible answer) when present. */
export function afterThinking(text: string): string {
  const end = text.lastIndexOf("</think>");
  return end >= 0 ? text.slice(end + "</think>".length) : text;
}
