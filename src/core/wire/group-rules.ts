/**
 * The rules a scored group must meet beyond its schema, checked before anything is stored.
 * Trainers index tokens, masks, scores, advantages and logprobs together and feed token ids to an
 * embedding table, so a group that breaks them would be stored, delivered and crash the trainer
 * later (Atropos stored them; docs/COMPATIBILITY.md):
 * - token ids (`tokens`, `distill_token_ids`) are integers in [0, 2^31); mask entries are -100
 *   (not trained) or such a token id;
 * - float fields hold finite numbers (1e400 would be stored as null; src/core/wire/numeric-matrix.ts);
 * - `distill_token_ids` and `distill_logprobs` are `[sequence][position][k]` with the shape of
 *   `tokens` in their first two dimensions, and the same k per position;
 * - every sequence has at least one token, and a group at least one sequence;
 * - per-token fields (masks, advantages, ref_logprobs, inference_logprobs, token_texts) have the
 *   shape of `tokens`; `scores` has one finite value per sequence.
 * The run's `max_token_len` needs the run, so it is checked at ingest (src/api/ingest.ts).
 */
import type { ScoredDataInput } from "./schemas";
import type { ValidationDetail } from "./validation";

/** Token ids are below this (or below a known tokenizer's vocabulary size). */
export const MAX_TOKEN_ID = 2 ** 31;

type Loc = (string | number)[];

const PER_TOKEN = [
  "masks",
  "advantages",
  "ref_logprobs",
  "inference_logprobs",
  "token_texts",
] as const;

/** The first token id outside [0, MAX_TOKEN_ID) in `ids`, as a 422 detail, or null. */
function badTokenId(ids: readonly number[], loc: Loc): ValidationDetail | null {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    if (id >= 0 && id < MAX_TOKEN_ID) continue;
    return {
      type: "value_error",
      loc: [...loc, i],
      msg: `token ids must be integers in [0, 2^31); got ${id}`,
      input: id,
    };
  }
  return null;
}

function checkTokenIds(group: ScoredDataInput, loc: Loc, issues: ValidationDetail[]): void {
  for (let s = 0; s < group.tokens.length; s++) {
    const bad = badTokenId(group.tokens[s]!, [...loc, "tokens", s]);
    if (bad) return void issues.push(bad);
  }
  const distill = group.distill_token_ids;
  if (!distill) return;
  for (let s = 0; s < distill.length; s++) {
    for (let p = 0; p < distill[s]!.length; p++) {
      const bad = badTokenId(distill[s]![p]!, [...loc, "distill_token_ids", s, p]);
      if (bad) return void issues.push(bad);
    }
  }
}

/** Mask entries are -100 (not trained) or a token id in [0, MAX_TOKEN_ID). */
function checkMasks(group: ScoredDataInput, loc: Loc, issues: ValidationDetail[]): void {
  for (let s = 0; s < group.masks.length; s++) {
    const mask = group.masks[s]!;
    for (let i = 0; i < mask.length; i++) {
      const m = mask[i]!;
      if (m === -100 || (m >= 0 && m < MAX_TOKEN_ID)) continue;
      return void issues.push({
        type: "value_error",
        loc: [...loc, "masks", s, i],
        msg: `mask entries must be -100 (not trained) or a token id in [0, 2^31); got ${m}`,
        input: m,
      });
    }
  }
}

/** The first place where `value` ([sequence][position][k]) differs from `shape`, or null. */
function cubeMismatch(
  value: readonly (readonly unknown[])[],
  shape: readonly (readonly unknown[])[],
  perPosition: readonly (readonly (readonly unknown[])[])[] | null,
): { at: number[]; got: number; want: number } | null {
  if (value.length !== shape.length) return { at: [], got: value.length, want: shape.length };
  for (let s = 0; s < value.length; s++) {
    const row = value[s]!;
    if (row.length !== shape[s]!.length)
      return { at: [s], got: row.length, want: shape[s]!.length };
    if (!perPosition) continue;
    for (let p = 0; p < row.length; p++) {
      const k = (row[p] as readonly unknown[]).length;
      const want = perPosition[s]![p]!.length;
      if (k !== want) return { at: [s, p], got: k, want };
    }
  }
  return null;
}

/** distill_token_ids has the shape of tokens; distill_logprobs that of distill_token_ids. */
function checkDistillShape(group: ScoredDataInput, loc: Loc, issues: ValidationDetail[]): void {
  const ids = group.distill_token_ids;
  const logprobs = group.distill_logprobs;
  const pairs: [
    string,
    readonly (readonly unknown[])[],
    string,
    ReturnType<typeof cubeMismatch>,
  ][] = [];
  if (ids) pairs.push(["distill_token_ids", ids, "tokens", cubeMismatch(ids, group.tokens, null)]);
  if (logprobs) {
    pairs.push(
      ids
        ? ["distill_logprobs", logprobs, "distill_token_ids", cubeMismatch(logprobs, ids, ids)]
        : ["distill_logprobs", logprobs, "tokens", cubeMismatch(logprobs, group.tokens, null)],
    );
  }
  for (const [name, , like, bad] of pairs) {
    if (!bad) continue;
    const where = bad.at.map((i) => `[${i}]`).join("");
    issues.push({
      type: "value_error",
      loc: [...loc, name, ...bad.at],
      msg: `${name}${where} has ${bad.got} entries but ${like}${where} has ${bad.want}; it must have the shape of ${like}`,
    });
    return;
  }
}

function checkPerTokenShape(
  group: ScoredDataInput,
  name: (typeof PER_TOKEN)[number],
  loc: Loc,
  issues: ValidationDetail[],
): void {
  const value = group[name] as readonly unknown[][] | null | undefined;
  if (value === null || value === undefined) return;
  const n = group.tokens.length;
  if (value.length !== n) {
    issues.push({
      type: "value_error",
      loc: [...loc, name],
      msg: `${name} has ${value.length} sequence(s) but tokens has ${n}; it must have the shape of tokens`,
    });
    return;
  }
  for (let i = 0; i < n; i++) {
    if (value[i]!.length === group.tokens[i]!.length) continue;
    issues.push({
      type: "value_error",
      loc: [...loc, name, i],
      msg: `${name}[${i}] has ${value[i]!.length} entries but tokens[${i}] has ${group.tokens[i]!.length}; it must have the shape of tokens`,
    });
    return;
  }
}

export function checkGroupShape(group: ScoredDataInput, loc: Loc = ["body"]): ValidationDetail[] {
  const issues: ValidationDetail[] = [];
  const n = group.tokens.length;
  if (n === 0) {
    issues.push({
      type: "value_error",
      loc: [...loc, "tokens"],
      msg: "a group must contain at least one sequence",
      input: [],
    });
    return issues;
  }
  const empty = group.tokens.findIndex((seq) => seq.length === 0);
  if (empty >= 0) {
    issues.push({
      type: "value_error",
      loc: [...loc, "tokens", empty],
      msg: `sequences must not be empty: tokens[${empty}] has no tokens`,
      input: [],
    });
  }
  checkTokenIds(group, loc, issues);
  checkMasks(group, loc, issues);
  for (const name of PER_TOKEN) checkPerTokenShape(group, name, loc, issues);
  checkDistillShape(group, loc, issues);
  if (group.scores.length !== n) {
    issues.push({
      type: "value_error",
      loc: [...loc, "scores"],
      msg: `scores has ${group.scores.length} value(s) but tokens has ${n} sequence(s); send one score per sequence`,
    });
  }
  for (let i = 0; i < group.scores.length; i++) {
    if (!Number.isFinite(group.scores[i])) {
      issues.push({
        type: "finite_number",
        loc: [...loc, "scores", i],
        msg: "Input should be a finite number",
      });
      break;
    }
  }
  return issues;
}

/**
 * The 422 detail for a group whose longest sequence (from its stats) is over the run's registered
 * `max_token_len`, or null (also when no trainer registered one: -1).
 */
export function checkSequenceLength(
  stats: { longestSeq: number; longestSeqAt: number },
  maxTokenLen: number,
  loc: Loc = ["body"],
): ValidationDetail | null {
  if (maxTokenLen < 0 || stats.longestSeq <= maxTokenLen) return null;
  return {
    type: "value_error",
    loc: [...loc, "tokens", stats.longestSeqAt],
    msg: `sequences must be at most max_token_len (${maxTokenLen}, registered by the trainer) tokens; tokens[${stats.longestSeqAt}] has ${stats.longestSeq}`,
  };
}
