/** Penalty in [-1, 0] for repetitive text (repeated words, phrases and sentences). */
import { type Completion, getContent, type RewardFunction } from "./types";

export interface RepetitionOptions {
  weight?: number;
  /** Repetition score at or below which there is no penalty. */
  threshold?: number;
  minWords?: number;
  shortTextPenalty?: number;
}

export class RepetitionPenaltyReward implements RewardFunction {
  readonly name = "repetition_penalty";
  readonly weight: number;
  private readonly threshold: number;
  private readonly minWords: number;
  private readonly shortTextPenalty: number;

  constructor(options: RepetitionOptions = {}) {
    this.weight = options.weight ?? 1;
    this.threshold = options.threshold ?? 0.05;
    this.minWords = options.minWords ?? 10;
    this.shortTextPenalty = options.shortTextPenalty ?? -0.1;
  }

  compute(completions: Completion[]): number[] {
    return completions.map((c) => this.penalty(getContent(c)));
  }

  penalty(text: string): number {
    const words = text.toLowerCase().match(/[a-z0-9']+/g) ?? [];
    if (words.length < this.minWords) return this.shortTextPenalty;
    const sentences = text
      .split(/[.!?\n]+/)
      .map((s) => s.trim().toLowerCase())
      .filter((s) => s.split(/\s+/).length > 3);
    const repeatedSentences = sentences.length - new Set(sentences).size;
    if (repeatedSentences > 0) {
      return Math.max(-1, -0.6 - 0.4 * (repeatedSentences / sentences.length));
    }
    const score =
      0.3 * repeatRate(words, 1) + 0.4 * repeatRate(words, 3) + 0.6 * stutterRate(words);
    if (score <= this.threshold) return 0;
    return -Math.min(1, (score - this.threshold) / (1 - this.threshold));
  }
}

/** Fraction of n-grams that already occurred earlier (function-word unigrams excluded). */
function repeatRate(words: string[], n: number): number {
  const seen = new Set<string>();
  let repeats = 0;
  let total = 0;
  for (let i = 0; i + n <= words.length; i++) {
    const gram = words.slice(i, i + n).join(" ");
    if (n === 1 && STOPWORDS.has(gram)) continue;
    total++;
    if (seen.has(gram)) repeats++;
    else seen.add(gram);
  }
  return total === 0 ? 0 : repeats / total;
}

/** Fraction of immediate word repeats ("the the"). */
function stutterRate(words: string[]): number {
  let n = 0;
  for (let i = 1; i < words.length; i++) if (words[i] === words[i - 1]) n++;
  return words.length <= 1 ? 0 : n / (words.length - 1);
}

const STOPWORDS = new Set(
  "a an the and or but of to in on at for with is are was were be it this that as by from so we i you he she they then if".split(
    " ",
  ),
);
