/**
 * SFT / DPO dataset selection with atropos-sft-gen / atropos-dpo-gen semantics, as pure functions
 * over groups (the CLI feeds them from a JSONL file or, read-only, from the API).
 *
 * SFT: per group, sequences sorted by score (desc); a sequence is kept when its score is > 0
 * (unless allowNegativeScores) and score − min(group) > minScoreDiff; the top N kept per group.
 * DPO: per group, each of the top N sequences (score > 0 unless allowed) is paired with a random
 * negative among the N lowest whose score < pos − minScoreDiff; a negative pairs at most once.
 * Text mode splits decoded tokens at the group's longest common token prefix:
 *   SFT {"prefix","completion","score"}, DPO {"prefix","pos","score","neg"};
 * messages mode: SFT {"messages","score"}, DPO {"pos": messages, "score", "neg": messages}.
 */

import { mulberry32 } from "../core/codecs/rng";
import type { ChatMessage, ScoredDataGroup } from "../core/wire/group-types";

export interface SelectionOptions {
  topN: number;
  minScoreDiff: number;
  allowNegativeScores: boolean;
  saveMessages: boolean;
  /** Needed unless saveMessages. */
  decode?: (ids: number[]) => string;
}

export type ExportRecord = Record<string, unknown>;

/** Length of the longest token prefix shared by every sequence (a single sequence: its prompt). */
export function commonPrefixLength(group: ScoredDataGroup): number {
  const seqs = group.tokens;
  if (seqs.length === 0) return 0;
  if (seqs.length === 1) {
    const mask = group.masks[0] ?? [];
    const firstTrained = mask.findIndex((m) => m !== -100);
    return firstTrained === -1 ? 0 : firstTrained;
  }
  let n = Math.min(...seqs.map((s) => s.length));
  for (let i = 0; i < n; i++) {
    const t = seqs[0]![i];
    if (seqs.some((s) => s[i] !== t)) {
      n = i;
      break;
    }
  }
  return n;
}

function byScoreDesc(group: ScoredDataGroup): number[] {
  return group.scores.map((_, i) => i).sort((a, b) => group.scores[b]! - group.scores[a]! || a - b);
}

function requireMessages(group: ScoredDataGroup, i: number): ChatMessage[] {
  const m = group.messages?.[i];
  if (!m)
    throw new Error("--save-messages needs groups with `messages`; export without it instead");
  return m;
}

function decoder(options: SelectionOptions): (ids: number[]) => string {
  if (!options.decode) throw new Error("text export needs a tokenizer (--tokenizer)");
  return options.decode;
}

export function selectSft(group: ScoredDataGroup, options: SelectionOptions): ExportRecord[] {
  if (group.scores.length === 0) return [];
  const min = Math.min(...group.scores);
  const kept = byScoreDesc(group)
    .filter((i) => {
      const s = group.scores[i]!;
      return (options.allowNegativeScores || s > 0) && s - min > options.minScoreDiff;
    })
    .slice(0, options.topN);
  if (options.saveMessages) {
    return kept.map((i) => ({ messages: requireMessages(group, i), score: group.scores[i] }));
  }
  const decode = decoder(options);
  const cut = commonPrefixLength(group);
  const prefix = decode(group.tokens[0]!.slice(0, cut));
  return kept.map((i) => ({
    prefix,
    completion: decode(group.tokens[i]!.slice(cut)),
    score: group.scores[i],
  }));
}

export function selectDpo(
  group: ScoredDataGroup,
  options: SelectionOptions & { random: () => number },
): ExportRecord[] {
  const order = byScoreDesc(group);
  const positives = order
    .filter((i) => options.allowNegativeScores || group.scores[i]! > 0)
    .slice(0, options.topN);
  // The pool of negatives: the N lowest, each used for at most one pair (as atropos-dpo-gen).
  const lowest = order.slice(-options.topN);
  const out: ExportRecord[] = [];
  const cut = options.saveMessages ? 0 : commonPrefixLength(group);
  for (const pos of positives) {
    const candidates = lowest.filter(
      (i) => i !== pos && group.scores[i]! < group.scores[pos]! - options.minScoreDiff,
    );
    if (candidates.length === 0) continue;
    const neg = candidates[Math.floor(options.random() * candidates.length)]!;
    lowest.splice(lowest.indexOf(neg), 1);
    if (options.saveMessages) {
      out.push({
        pos: requireMessages(group, pos),
        score: group.scores[pos],
        neg: requireMessages(group, neg),
      });
    } else {
      const decode = decoder(options);
      out.push({
        prefix: decode(group.tokens[0]!.slice(0, cut)),
        pos: decode(group.tokens[pos]!.slice(cut)),
        score: group.scores[pos],
        neg: decode(group.tokens[neg]!.slice(cut)),
      });
    }
  }
  return out;
}

/** Deterministic PRNG so exports are reproducible with --seed. */
export const seededRandom = mulberry32;

/** Selects records over many groups, stopping at maxRecords (≤0 = no limit). */
export function exportRecords(
  kind: "sft" | "dpo",
  groups: Iterable<ScoredDataGroup>,
  options: SelectionOptions & { seed: number; maxRecords: number },
): ExportRecord[] {
  const random = seededRandom(options.seed);
  const out: ExportRecord[] = [];
  for (const group of groups) {
    const records =
      kind === "sft" ? selectSft(group, options) : selectDpo(group, { ...options, random });
    for (const r of records) {
      if (options.maxRecords > 0 && out.length >= options.maxRecords) return out;
      out.push(r);
    }
  }
  return out;
}
