/**
 * Envs that exist only for the Workers tests. test-worker.ts registers them with the built-in
 * envs through createWorker, the way a user's project registers its own; tests import the same
 * module instance (the pool runs tests and the Worker in one isolate) to steer them.
 */
import type { ScoredDataGroup } from "../../src/core/wire/group-types";
import {
  BaseEnv,
  DropGroupError,
  type EvalResult,
  type TrajectoriesResult,
} from "../../src/env-sdk/base-env";
import { type BaseEnvConfig, BaseEnvConfigSchema } from "../../src/env-sdk/config";
import { defineEnv } from "../../src/env-sdk/define-env";
import { sampleChat } from "../../src/env-sdk/runtime/sampling";

/**
 * Items are counters; evaluation finishes when a test sets `evaluationControl.released` (plain
 * flags: a promise resolver would cross from the test into the Durable Object's I/O context).
 */
export const evaluationControl = { started: false, released: false };

export class EvalTestEnv extends BaseEnv<number, BaseEnvConfig> {
  static override envName = "feeder_eval_test";
  private next = 0;

  async getNextItem(): Promise<number | null> {
    return this.next++;
  }

  override async evaluateWithSamples(): Promise<EvalResult> {
    evaluationControl.started = true;
    for (let i = 0; i < 1200 && !evaluationControl.released; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    return { metrics: { accuracy: 0.75 }, samples: [] };
  }

  override saveCheckpoint() {
    return { next: this.next };
  }

  override loadCheckpoint(state: { next?: unknown }) {
    this.next = Number(state.next ?? 0);
  }
}

/** Its evaluation runs code in the sandbox the runtime handed it (the feeder's, in a Worker). */
export class SandboxEvalTestEnv extends BaseEnv<number, BaseEnvConfig> {
  static override envName = "feeder_sandbox_eval_test";
  async getNextItem(): Promise<number | null> {
    return null;
  }

  override async evaluate(): Promise<Record<string, number>> {
    const result = await (await this.sandbox()).run({
      language: "javascript",
      code: "return 6 * 7",
    });
    return { answer: Number(result.value) };
  }
}

/** Two groups per item: a valid one, then one with a negative token id (send validation passes it). */
export class InvalidGroupTestEnv extends BaseEnv<number, BaseEnvConfig> {
  static override envName = "invalid_group_test";
  async getNextItem(): Promise<number | null> {
    return null;
  }

  override async collectTrajectories(): Promise<TrajectoriesResult<number>> {
    const n = this.config.group_size;
    const make = (first: number): ScoredDataGroup => ({
      tokens: Array.from({ length: n }, () => [first, 2, 3]),
      masks: Array.from({ length: n }, () => [-100, 2, 3]),
      scores: Array.from({ length: n }, (_, i) => i % 2),
    });
    return [[make(1), make(-1)], []];
  }
}

export class BigItemTestEnv extends BaseEnv<string, BaseEnvConfig> {
  static override envName = "feeder_big_item_test";
  async getNextItem(): Promise<string | null> {
    return "x".repeat(200_000);
  }
}

/** Hands out nothing: an env worker that only has to exist (reset tests). */
export class IdleTestEnv extends BaseEnv<number, BaseEnvConfig> {
  static override envName = "reset_idle_test";
  async getNextItem(): Promise<number | null> {
    return null;
  }
}

export const GROUP_SIZE = 4;

export type FaultItem = {
  key: string;
  failures: number;
  identicalScores?: boolean;
  /** Throw on every attempt: a deliberate drop, or a bug (TypeError). */
  throws?: "drop" | "bug";
  /** The message of the failed attempts (default: "simulated consumer crash (attempt N)"). */
  message?: string;
};

/** Attempts per item key, across env instances (the isolate-wide rollout cache reuses one). */
export const attemptsByKey = new Map<string, number>();

/**
 * Fails the first `failures` attempts of an item, then returns a group whose tokens include the
 * attempt number: a redelivery produces *different* content, so only the item's idempotency key
 * (not content-hash dedupe) can keep it from being stored twice.
 */
export class FaultyTestEnv extends BaseEnv<FaultItem, BaseEnvConfig> {
  static override envName = "faulty_queue_test";

  async getNextItem(): Promise<FaultItem | null> {
    return null;
  }

  override async collectTrajectories(item: FaultItem): Promise<TrajectoriesResult<FaultItem>> {
    const attempt = (attemptsByKey.get(item.key) ?? 0) + 1;
    attemptsByKey.set(item.key, attempt);
    if (item.throws === "drop") throw new DropGroupError("too few judges answered (1 of 3)");
    if (item.throws === "bug") {
      const missing = null as unknown as { length: number };
      return [null, [missing.length as unknown as FaultItem]];
    }
    if (attempt <= item.failures) {
      throw new Error(item.message ?? `simulated consumer crash (attempt ${attempt})`);
    }
    const tokens = Array.from({ length: GROUP_SIZE }, (_, s) => [
      101,
      102,
      103,
      1000 + attempt,
      2000 + s,
    ]);
    const group: ScoredDataGroup = {
      tokens,
      masks: tokens.map((seq) => seq.map((t, i) => (i < 3 ? -100 : t))),
      scores: tokens.map((_, s) => (item.identicalScores || s % 2 === 0 ? 1 : -1)),
    };
    return [group, []];
  }
}

/**
 * Items are counters, each rolled out as GROUPS_PER_CONSTANT_ITEM groups; the reward gives every
 * rollout 0, so every group has identical scores.
 */
export const GROUPS_PER_CONSTANT_ITEM = 10;

export class ConstantRewardTestEnv extends BaseEnv<number, BaseEnvConfig> {
  static override envName = "constant_reward_test";
  private next = 0;

  async getNextItem(): Promise<number | null> {
    return this.next++;
  }

  override async collectTrajectories(item: number): Promise<TrajectoriesResult<number>> {
    const reward = (_tokens: number[]) => 0;
    this.observe("groups_per_item", GROUPS_PER_CONSTANT_ITEM);
    const groups = Array.from({ length: GROUPS_PER_CONSTANT_ITEM }, (_, g): ScoredDataGroup => {
      const tokens = Array.from({ length: GROUP_SIZE }, (_, s) => [101, 1000 + item, 2000 + g, s]);
      return {
        tokens,
        masks: tokens.map((seq) => seq.map((t, i) => (i < 2 ? -100 : t))),
        scores: tokens.map(reward),
      };
    });
    return [groups, []];
  }

  override saveCheckpoint() {
    return { next: this.next };
  }

  override loadCheckpoint(state: { next?: unknown }) {
    this.next = Number(state.next ?? 0);
  }
}

/**
 * How a token-ids item gets its prompt: ids given (the backend does the rest), text the env
 * encodes itself, or a chat through a ManagedServer (which tokenizes).
 */
/** `decode`: the env decodes the sampled ids (a synchronous tokenizer use after sampling). */
export type TokenIdsItem =
  | { ids: number[]; decode?: boolean }
  | { text: string }
  | { chat: string };

/** Samples GROUP_SIZE completions token-in/token-out; the group is built from the returned ids. */
export class TokenIdsTestEnv extends BaseEnv<TokenIdsItem, BaseEnvConfig> {
  static override envName = "token_ids_test";

  async getNextItem(): Promise<TokenIdsItem | null> {
    return null;
  }

  override async collectTrajectories(
    item: TokenIdsItem,
  ): Promise<TrajectoriesResult<TokenIdsItem>> {
    const n = this.config.group_size;
    let sequences: number[][];
    let promptLength: number;
    if ("chat" in item) {
      const choices = await sampleChat(
        this.inference,
        this.tokenizer,
        [{ role: "user", content: item.chat }],
        { n, max_tokens: 4 },
      );
      sequences = choices.map((c) => c.node.tokens);
      promptLength = choices[0]!.node.masked_tokens.findIndex((t) => t !== -100);
    } else {
      const ids = "ids" in item ? item.ids : this.tokenizer.encode(item.text);
      const result = await this.inference.tokensAndLogprobsCompletion({
        prompt: "",
        input_ids: ids,
        n,
        max_tokens: 4,
      });
      sequences = result.outputTokens.map((output) => [...result.promptTokens, ...output]);
      promptLength = ids.length;
    }
    if ("decode" in item && item.decode) {
      for (const seq of sequences) this.tokenizer.decode(seq.slice(promptLength));
    }
    const group: ScoredDataGroup = {
      tokens: sequences,
      masks: sequences.map((seq) => seq.map((t, i) => (i < promptLength ? -100 : t))),
      scores: sequences.map((_, s) => (s % 2 === 0 ? 1 : -1)),
    };
    return [group, []];
  }
}

export const testEnvs = [
  defineEnv(EvalTestEnv, BaseEnvConfigSchema, "test only"),
  defineEnv(BigItemTestEnv, BaseEnvConfigSchema, "test only"),
  defineEnv(InvalidGroupTestEnv, BaseEnvConfigSchema, "test only: its second group is invalid"),
  defineEnv(SandboxEvalTestEnv, BaseEnvConfigSchema, "test only: evaluates in the sandbox"),
  defineEnv(IdleTestEnv, BaseEnvConfigSchema, "test only"),
  defineEnv(FaultyTestEnv, BaseEnvConfigSchema, "test only: fails the first N attempts of an item"),
  defineEnv(ConstantRewardTestEnv, BaseEnvConfigSchema, "test only: every answer scores 0"),
  defineEnv(TokenIdsTestEnv, BaseEnvConfigSchema, "test only: token-in/token-out rollouts"),
];
