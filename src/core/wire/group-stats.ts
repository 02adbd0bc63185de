/** Summary numbers of a validated group (what D1 records beside it). */
import type { ScoredDataInput } from "./schemas";

export interface GroupStats {
  numSeqs: number;
  totalTokens: number;
  completionTokens: number;
  scoreMean: number | null;
  scoreMin: number | null;
  scoreMax: number | null;
  /** Tokens in the longest sequence (checked against the run's max_token_len). */
  longestSeq: number;
  /** Which sequence that is. */
  longestSeqAt: number;
}

export function groupStats(group: ScoredDataInput): GroupStats {
  let totalTokens = 0;
  let completionTokens = 0;
  let longestSeq = 0;
  let longestSeqAt = 0;
  for (let s = 0; s < group.tokens.length; s++) {
    totalTokens += group.tokens[s]!.length;
    if (group.tokens[s]!.length > longestSeq) {
      longestSeq = group.tokens[s]!.length;
      longestSeqAt = s;
    }
    const mask = group.masks[s] ?? [];
    for (let i = 0; i < mask.length; i++) if (mask[i] !== -100) completionTokens++;
  }
  const scores = group.scores;
  let sum = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const v of scores) {
    sum += v;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return {
    numSeqs: group.tokens.length,
    totalTokens,
    completionTokens,
    scoreMean: scores.length ? sum / scores.length : null,
    scoreMin: scores.length ? min : null,
    scoreMax: scores.length ? max : null,
    longestSeq,
    longestSeqAt,
  };
}
