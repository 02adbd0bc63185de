/**
 * The checks Atropos' `handle_send_to_api` applies to a group before it leaves the env (docs/WRITING_ENVS.md, validation),
 * as a pure function. Differences from the original (deliberate):
 * - `group_overrides: null` is treated as "no overrides" instead of crashing the whole send;
 * - the identical-scores rule applies only to groups of 2+ sequences (a group of 1 always has
 *   "identical" scores, which silently killed SFT/DPO-style envs);
 * - structural problems the trainer would choke on (ragged tokens/masks/logprobs, score count,
 *   empty sequences) are rejected here with a reason instead of later in the trainer.
 */
import type { ChatMessage, ScoredDataGroup } from "../core/wire/group-types";
import type { Tokenizer } from "../inference/types";

export interface SendValidationOptions {
  groupSize: number;
  ensureScoresAreNotSame: boolean;
  /** ≤0 disables the length check (trainer sent -1, or `process` mode). */
  maxTokenLen: number;
  includeMessages: boolean;
  /** Attach each token's decoded text (`token_texts`) when the group has none. */
  includeTokenTexts?: boolean;
  /** Needed only for include_messages synthesis and token texts. */
  tokenizer?: Pick<Tokenizer, "decode">;
  /** Atropos `abort_on_any_max_length_exceeded` (true in serve, false in process). */
  abortOnMaxLength?: boolean;
  /**
   * false: skip the per-sequence structural checks (ragged masks/logprobs, counts, empty
   * sequences, finite scores) because the caller checks the group with the rollout API's own
   * rules before submitting it (the Worker's queue consumer), so they run once. Default true.
   */
  checkStructure?: boolean;
}

/**
 * `permanent`: the group breaks a structural rule no sample can satisfy (an env bug), as opposed
 * to a drop that depends on what was sampled (size, identical scores, length).
 */
export type SendValidationResult =
  | { ok: true; group: ScoredDataGroup }
  | { ok: false; reason: string; permanent?: true };

const invalid = (reason: string) => ({ ok: false, reason, permanent: true }) as const;

export function expectedGroupSize(group: ScoredDataGroup, defaultSize: number): number {
  const override = group.group_overrides?.group_size;
  return typeof override === "number" && Number.isInteger(override) && override > 0
    ? override
    : defaultSize;
}

export function validateGroupForSend(
  group: ScoredDataGroup | null | undefined,
  options: SendValidationOptions,
): SendValidationResult {
  if (!group) return { ok: false, reason: "group is null" };
  const tokens = group.tokens;
  if (!Array.isArray(tokens) || !Array.isArray(group.masks) || !Array.isArray(group.scores)) {
    return invalid("group lacks tokens, masks or scores");
  }
  const expected = expectedGroupSize(group, options.groupSize);
  if (tokens.length !== expected) {
    return { ok: false, reason: `group has ${tokens.length} sequences, expected ${expected}` };
  }
  if (options.checkStructure ?? true) {
    const problem = structureProblem(group);
    if (problem) return invalid(problem);
  }
  if (options.ensureScoresAreNotSame && group.scores.length > 1) {
    const first = group.scores[0];
    if (group.scores.every((s) => s === first)) {
      return { ok: false, reason: `all scores identical (${first})` };
    }
  }
  if (options.maxTokenLen > 0 && (options.abortOnMaxLength ?? true)) {
    const longest = Math.max(...tokens.map((t) => t.length));
    if (longest >= options.maxTokenLen) {
      return {
        ok: false,
        reason: `sequence of ${longest} tokens reaches max_token_len ${options.maxTokenLen}`,
      };
    }
  }

  const out: ScoredDataGroup = {
    ...group,
    ref_logprobs: group.ref_logprobs ?? null,
    overrides: group.overrides ?? null,
    group_overrides: group.group_overrides ?? null,
    distill_token_ids: group.distill_token_ids ?? null,
    distill_logprobs: group.distill_logprobs ?? null,
  };
  if (options.includeMessages && (out.messages === undefined || out.messages === null)) {
    if (!options.tokenizer) return invalid("include_messages needs a tokenizer");
    const decoder = options.tokenizer;
    out.messages = tokens.map((seq): ChatMessage[] => [
      { role: "user", content: decoder.decode(seq) },
    ]);
  }
  if (options.includeTokenTexts && !out.token_texts) {
    if (!options.tokenizer) return invalid("include_token_texts needs a tokenizer");
    const decoder = options.tokenizer;
    out.token_texts = tokens.map((seq) => seq.map((t) => decoder.decode([t])));
  }
  return { ok: true, group: out };
}

/** The first structural rule `group` breaks (a reason), or null. */
function structureProblem(group: ScoredDataGroup): string | null {
  const tokens = group.tokens;
  if (group.masks.length !== tokens.length || group.scores.length !== tokens.length) {
    return `tokens/masks/scores counts differ (${tokens.length}/${group.masks.length}/${group.scores.length})`;
  }
  for (let i = 0; i < tokens.length; i++) {
    const seq = tokens[i]!;
    if (seq.length === 0) return `sequence ${i} is empty`;
    if (group.masks[i]!.length !== seq.length) {
      return `sequence ${i}: masks length differs from tokens length`;
    }
    const lp = group.inference_logprobs?.[i];
    if (group.inference_logprobs && (!lp || lp.length !== seq.length)) {
      return `sequence ${i}: inference_logprobs length differs from tokens`;
    }
  }
  if (!group.scores.every((s) => typeof s === "number" && Number.isFinite(s))) {
    return "scores must be finite numbers";
  }
  return null;
}

/** Number of trainable positions (mask ≠ -100) per sequence: Atropos' "completion length". */
export function completionLengths(group: ScoredDataGroup): number[] {
  return group.masks.map((m) => m.filter((v) => v !== -100).length);
}
