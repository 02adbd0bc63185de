/** Structural rewards: required tags, and the R1-style "one thought, then an answer" format. */
import { type Completion, getContent, type RewardFunction } from "./types";

export interface FormatOptions {
  weight?: number;
  preferredTags?: string[];
  requireAllTags?: boolean;
  caseSensitive?: boolean;
}

/** 1 when any (or, with requireAllTags, every) `<tag>…</tag>` pair is present. */
export class FormatReward implements RewardFunction {
  readonly name = "format";
  readonly weight: number;
  private readonly tags: string[];
  private readonly requireAll: boolean;
  private readonly flags: string;

  constructor(options: FormatOptions = {}) {
    this.weight = options.weight ?? 1;
    this.tags = options.preferredTags ?? ["think", "answer"];
    this.requireAll = options.requireAllTags ?? false;
    this.flags = options.caseSensitive ? "" : "i";
  }

  compute(completions: Completion[]): number[] {
    return completions.map((c) => {
      const text = getContent(c);
      const present = this.tags.map((tag) =>
        new RegExp(`<${escapeRegExp(tag)}>[\\s\\S]*?</${escapeRegExp(tag)}>`, this.flags).test(
          text,
        ),
      );
      const ok = this.requireAll ? present.every(Boolean) : present.some(Boolean);
      return ok ? 1 : 0;
    });
  }
}

export interface ThinkingFormatOptions {
  weight?: number;
  rewardValue?: number;
  allowMultipleThinking?: boolean;
}

/** rewardValue when the text is exactly one non-empty <think> block followed by a non-empty answer. */
export class ThinkingFormatReward implements RewardFunction {
  readonly name = "thinking_format";
  readonly weight: number;
  private readonly rewardValue: number;
  private readonly allowMultiple: boolean;

  constructor(options: ThinkingFormatOptions = {}) {
    this.weight = options.weight ?? 1;
    this.rewardValue = options.rewardValue ?? 1;
    this.allowMultiple = options.allowMultipleThinking ?? false;
  }

  compute(completions: Completion[]): number[] {
    return completions.map((c) =>
      isThinkingFormat(getContent(c), this.allowMultiple) ? this.rewardValue : 0,
    );
  }
}

export function isThinkingFormat(text: string, allowMultiple = false): boolean {
  const opens = text.match(/<think>/g)?.length ?? 0;
  const closes = text.match(/<\/think>/g)?.length ?? 0;
  if (opens === 0 || opens !== closes || (!allowMultiple && opens > 1)) return false;
  const trimmed = text.trim();
  if (!trimmed.startsWith("<think>")) return false;
  const blocks = [...trimmed.matchAll(/<think>([\s\S]*?)<\/think>/g)];
  if (blocks.length !== opens || blocks.some((b) => b[1]!.trim().length === 0)) return false;
  const answer = trimmed.slice(trimmed.lastIndexOf("</think>") + "</think>".length);
  return answer.trim().length > 0 && !answer.includes("<think>");
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
