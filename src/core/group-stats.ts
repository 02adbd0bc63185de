/**
 * Cross-field checks and summary numbers of a validated group. Trainers index tokens, masks,
 * scores and logprobs together, so shapes that disagree are rejected (Atropos stored them and
 * let the trainer crash later).
 */
import type { ScoredDataInput } from "./schemas";
import type { ValidationDetail } from "./validation";

export interface GroupStats {
  numSeqs: number;
  totalTokens: number;
  completionTokens: number;
  scoreMean: number | null;
  scoreMin: number | null;
  scoreMax: number | null;
}

export function checkGroupShape(
  group: ScoredDataInput,
  loc: (string | number)[] = ["body"],
): ValidationDetail[] {
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
  const sameShape = (
    name: "masks" | "inference_logprobs" | "token_texts",
    value: unknown[][] | null | undefined,
  ) => {
    if (value === null || value === undefined) return;
    if (value.length !== n) {
      issues.push({
        type: "value_error",
        loc: [...loc, name],
        msg: `${name} has ${value.length} sequence(s) but tokens has ${n}`,
      });
      return;
    }
    for (let i = 0; i < n; i++) {
      if (value[i]!.length !== group.tokens[i]!.length) {
        issues.push({
          type: "value_error",
          loc: [...loc, name, i],
          msg: `${name}[${i}] has ${value[i]!.length} entries but tokens[${i}] has ${group.tokens[i]!.length}`,
        });
        return;
      }
    }
  };
  sameShape("masks", group.masks);
  sameShape("inference_logprobs", group.inference_logprobs);
  sameShape("token_texts", group.token_texts);
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

export function groupStats(group: ScoredDataInput): GroupStats {
  let totalTokens = 0;
  let completionTokens = 0;
  for (let s = 0; s < group.tokens.length; s++) {
    totalTokens += group.tokens[s]!.length;
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
  };
}
