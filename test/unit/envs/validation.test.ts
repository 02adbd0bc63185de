import { describe, expect, it } from "vitest";
import type { ScoredDataGroup, ScoredDataItem } from "../../../src/core/wire/group-types";
import { BaseEnv, mergeIntoGroup } from "../../../src/env-sdk/base-env";
import { BaseEnvConfigSchema, parseEnvConfig } from "../../../src/env-sdk/config";
import { completionLengths, validateGroupForSend } from "../../../src/env-sdk/send-validation";
import { CharTokenizer, FakeInference } from "./fakes";

const group = (scores: number[], extra: Partial<ScoredDataGroup> = {}): ScoredDataGroup => ({
  tokens: scores.map(() => [1, 2, 3]),
  masks: scores.map(() => [-100, 2, 3]),
  scores,
  ...extra,
});
const opts = {
  groupSize: 2,
  ensureScoresAreNotSame: true,
  maxTokenLen: 10,
  includeMessages: false,
};

describe("BaseEnvConfig", () => {
  it("fills Atropos defaults and rejects unknown or invalid fields", () => {
    const c = parseEnvConfig(BaseEnvConfigSchema, {});
    expect(c).toMatchObject({
      group_size: 4,
      max_num_workers: -1,
      eval_handling: "STOP_TRAIN",
      tokenizer_name: "qwen3",
      run: "default",
      min_batch_allocation: null,
      ensure_scores_are_not_same: true,
    });
    expect(() => parseEnvConfig(BaseEnvConfigSchema, { eval_limit_ratio: 2 })).toThrow(
      /eval_limit_ratio/,
    );
    expect(() => parseEnvConfig(BaseEnvConfigSchema, { eval_handling: "SOMETIMES" })).toThrow(
      /eval_handling/,
    );
    expect(() => parseEnvConfig(BaseEnvConfigSchema, { group_sise: 2 })).toThrow();
  });
});

describe("validateGroupForSend", () => {
  it("uses group_overrides.group_size and survives null group_overrides", () => {
    expect(validateGroupForSend(group([1, 0]), opts).ok).toBe(true);
    expect(
      validateGroupForSend(group([1, 0, 1], { group_overrides: { group_size: 3 } }), opts).ok,
    ).toBe(true);
    const bad = validateGroupForSend(group([1, 0, 1], { group_overrides: null }), opts);
    expect(bad).toEqual({ ok: false, reason: "group has 3 sequences, expected 2" });
  });

  it("drops identical scores, over-length and ragged groups; fills nulls", () => {
    expect(validateGroupForSend(group([1, 1]), opts)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/identical/),
    });
    expect(validateGroupForSend(group([1, 1]), { ...opts, ensureScoresAreNotSame: false }).ok).toBe(
      true,
    );
    expect(validateGroupForSend(group([1]), { ...opts, groupSize: 1 }).ok).toBe(true);
    expect(validateGroupForSend(group([1, 0]), { ...opts, maxTokenLen: 3 })).toMatchObject({
      ok: false,
    });
    expect(
      validateGroupForSend(group([1, 0]), { ...opts, maxTokenLen: 3, abortOnMaxLength: false }).ok,
    ).toBe(true);
    expect(validateGroupForSend(group([1, 0]), { ...opts, maxTokenLen: -1 }).ok).toBe(true);
    expect(validateGroupForSend(group([1, 0], { masks: [[1], [1, 2, 3]] }), opts)).toMatchObject({
      ok: false,
    });
    expect(
      validateGroupForSend(group([1, 0], { inference_logprobs: [[0, 0, 0], [0]] }), opts),
    ).toMatchObject({ ok: false });
    expect(validateGroupForSend(null, opts).ok).toBe(false);
    const ok = validateGroupForSend(group([1, 0]), opts);
    expect(ok.ok && ok.group).toMatchObject({
      ref_logprobs: null,
      overrides: null,
      group_overrides: null,
      distill_token_ids: null,
      distill_logprobs: null,
    });
  });

  it("marks structural failures permanent and sample-dependent drops not", () => {
    const permanent = (g: Parameters<typeof validateGroupForSend>[0]) => {
      const res = validateGroupForSend(g, opts);
      return !res.ok && res.permanent === true;
    };
    expect(permanent(group([1, 0], { masks: [[1], [1, 2, 3]] }))).toBe(true);
    expect(permanent(group([1, 0], { inference_logprobs: [[0, 0, 0], [0]] }))).toBe(true);
    expect(permanent(group([1, Number.NaN]))).toBe(true);
    expect(permanent(group([1, 0], { tokens: [[], [1, 2, 3]], masks: [[], [1, 2, 3]] }))).toBe(
      true,
    );
    expect(permanent(group([1, 1]))).toBe(false);
    expect(permanent(group([1, 0, 1]))).toBe(false);
    expect(permanent(null)).toBe(false);
  });

  it("synthesises messages from tokens when include_messages is set", () => {
    const tok = new CharTokenizer();
    const g = {
      tokens: [tok.encode("hi"), tok.encode("yo")],
      masks: [
        [-100, 105],
        [-100, 111],
      ],
      scores: [1, 0],
    };
    const res = validateGroupForSend(g, { ...opts, includeMessages: true, tokenizer: tok });
    expect(res.ok && res.group.messages).toEqual([
      [{ role: "user", content: "hi" }],
      [{ role: "user", content: "yo" }],
    ]);
    expect(completionLengths(g)).toEqual([1, 1]);
  });
});

describe("BaseEnv defaults", () => {
  class Coin extends BaseEnv<{ n: number }> {
    static override envName = "coin";
    flips = 0;
    override async getNextItem() {
      return { n: 1 };
    }
    override async collectTrajectory(): Promise<[ScoredDataItem | null, { n: number }[]]> {
      const i = this.flips++;
      return [
        {
          tokens: [1, 2],
          masks: [-100, 2],
          scores: i % 2,
          inference_logprobs: [1, -0.5],
          ...(i === 0 ? { overrides: { a: 1 } } : {}),
        },
        i === 0 ? [{ n: 9 }] : [],
      ];
    }
  }

  it("runs group_size collectTrajectory calls and keeps logprobs, overrides aligned", async () => {
    const env = new Coin(
      parseEnvConfig(BaseEnvConfigSchema, { group_size: 3 }),
      new FakeInference(),
      new CharTokenizer(),
    );
    expect(env.name).toBe("coin");
    const [g, backlog] = await env.collectTrajectories({ n: 1 });
    expect(backlog).toEqual([{ n: 9 }]);
    expect(g).toMatchObject({
      scores: [0, 1, 0],
      inference_logprobs: [
        [1, -0.5],
        [1, -0.5],
        [1, -0.5],
      ],
      overrides: [{ a: 1 }, {}, {}],
    });
    expect(
      mergeIntoGroup([
        { tokens: [1], masks: [1], scores: 1, messages: [] },
        { tokens: [1], masks: [1], scores: 0 },
      ]).messages,
    ).toBeUndefined();
  });
});

describe("token texts", () => {
  it("attaches each token's decoded text with include_token_texts, and keeps what the env sent", () => {
    const tokenizer = new CharTokenizer();
    const tokens = [tokenizer.encode("ab!"), tokenizer.encode("cd?")];
    const withTexts = validateGroupForSend(
      { tokens, masks: tokens.map((t) => t.map(() => -100)), scores: [1, 0] },
      { ...opts, includeTokenTexts: true, tokenizer },
    );
    expect(withTexts.ok && withTexts.group.token_texts).toEqual([
      ["a", "b", "!"],
      ["c", "d", "?"],
    ]);
    const sent = [
      ["x", "y", "z"],
      ["u", "v", "w"],
    ];
    const kept = validateGroupForSend(group([1, 0], { token_texts: sent }), {
      ...opts,
      includeTokenTexts: true,
      tokenizer,
    });
    expect(kept.ok && kept.group.token_texts).toEqual(sent);
    const off = validateGroupForSend(group([1, 0]), { ...opts, tokenizer });
    expect(off.ok && off.group.token_texts).toBeUndefined();
  });
});

describe("send validation for a caller that checks structure itself", () => {
  it("leaves the per-sequence rules to it (checkStructure: false) and keeps the sampled ones", () => {
    const ragged = group([1, 0], { masks: [[-100, 2, 3], [2]] });
    expect(validateGroupForSend(ragged, opts)).toMatchObject({ ok: false, permanent: true });
    expect(validateGroupForSend(ragged, { ...opts, checkStructure: false })).toMatchObject({
      ok: true,
    });
    expect(validateGroupForSend(group([1, 1]), { ...opts, checkStructure: false })).toEqual({
      ok: false,
      reason: "all scores identical (1)",
    });
  });
});
