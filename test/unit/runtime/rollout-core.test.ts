import { afterEach, describe, expect, it } from "vitest";
import type { ScoredDataGroup } from "../../../src/core/wire/group-types";
import { BaseEnv, DropGroupError, type TrajectoriesResult } from "../../../src/env-sdk/base-env";
import { type BaseEnvConfig, BaseEnvConfigSchema } from "../../../src/env-sdk/config";
import { ApiError, RolloutApiClient } from "../../../src/env-sdk/runtime/api-client";
import { nodeGetWithBody } from "../../../src/env-sdk/runtime/node-get-with-body";
import { processEnv } from "../../../src/env-sdk/runtime/process";
import {
  classifyRolloutError,
  type IndexedGroup,
  InvalidGroupError,
  RolloutTimeoutError,
  runRolloutItem,
} from "../../../src/env-sdk/runtime/rollout-core";
import { serveEnv } from "../../../src/env-sdk/runtime/serve";
import type { SendValidationOptions } from "../../../src/env-sdk/send-validation";
import { InferenceHttpError, InferenceProtocolError } from "../../../src/inference/backends/http";
import { CharTokenizer, FakeInference } from "../envs/fakes";
import { startFakeAtropos } from "./fake-atropos";

const GROUP_SIZE = 2;

const group = (scores: number[], len = 3): ScoredDataGroup => ({
  tokens: scores.map((_, i) => Array.from({ length: len }, (_, p) => 10 * i + p + 1)),
  masks: scores.map(() => Array.from({ length: len }, () => 1)),
  scores,
});

/** What collectTrajectories does for an item (each item names its script). */
type Script =
  | "ok"
  | "ok-then-more"
  | "two-groups-one-identical"
  | "identical"
  | "none"
  | "drop"
  | "ragged"
  | "ragged-beside-valid"
  | "bug"
  | "hang";

class ScriptedEnv extends BaseEnv<Script, BaseEnvConfig> {
  static override envName = "scripted";
  readonly recorded: number[][] = [];
  cleanups = 0;
  failCleanup = false;
  dropInPostprocess = false;
  private queue: Script[] = [];

  withItems(items: Script[]): this {
    this.queue = [...items];
    return this;
  }

  async getNextItem(): Promise<Script | null> {
    return this.queue.shift() ?? null;
  }

  override async collectTrajectories(item: Script): Promise<TrajectoriesResult<Script>> {
    switch (item) {
      case "ok":
        return [group([1, 0]), []];
      case "ok-then-more":
        return [group([1, 0]), ["ok"]];
      case "two-groups-one-identical":
        return [[group([1, 1]), group([1, 0])], []];
      case "identical":
        return [group([0.5, 0.5]), []];
      case "none":
        return [null, []];
      case "drop":
        throw new DropGroupError("only 1 of 3 judges answered");
      case "ragged":
        return [{ ...group([1, 0]), masks: [[1], [1, 1, 1]] }, ["ok"]];
      case "ragged-beside-valid":
        return [[group([1, 0]), { ...group([1, 0]), masks: [[1], [1, 1, 1]] }], []];
      case "bug": {
        const undefinedThing = undefined as unknown as { field: number };
        return [group([undefinedThing.field, 0]), []];
      }
      case "hang":
        return new Promise(() => {});
    }
  }

  override async postprocessHistories(
    groups: ScoredDataGroup | ScoredDataGroup[] | null,
  ): Promise<ScoredDataGroup | ScoredDataGroup[] | null> {
    if (this.dropInPostprocess) throw new DropGroupError("length penalty left nothing");
    return groups;
  }

  override recordScores(_item: Script, scores: number[]): void {
    this.recorded.push(scores);
  }

  override async cleanup(): Promise<void> {
    this.cleanups++;
    if (this.failCleanup) throw new Error("cleanup failed");
  }
}

function scripted(config: Partial<BaseEnvConfig> = {}) {
  const tokenizer = new CharTokenizer();
  return new ScriptedEnv(
    BaseEnvConfigSchema.parse({ group_size: GROUP_SIZE, ...config }),
    new FakeInference(tokenizer),
    tokenizer,
  );
}

const validation: SendValidationOptions = {
  groupSize: GROUP_SIZE,
  ensureScoresAreNotSame: true,
  maxTokenLen: -1,
  includeMessages: false,
};

/** runRolloutItem with a submit that records what it was handed. */
async function run(
  env: ScriptedEnv,
  item: Script,
  options: Partial<Parameters<typeof runRolloutItem>[2]> = {},
) {
  const submitted: IndexedGroup[][] = [];
  const result = await runRolloutItem(env, item, {
    validation,
    submit: async (groups) => {
      submitted.push(groups);
      return "receipt";
    },
    ...options,
  });
  return { result, submitted };
}

describe("classifyRolloutError", () => {
  it("classes DropGroupError as a drop, also a copy from another bundle (matched by name)", () => {
    expect(classifyRolloutError(new DropGroupError("too few judges"))).toBe("drop");
    const foreign = new Error("too few judges");
    foreign.name = "DropGroupError";
    expect(classifyRolloutError(foreign)).toBe("drop");
  });

  it("classes 5xx, 408 and 429 as retryable and other 4xx as permanent", () => {
    for (const status of [500, 502, 503, 408, 429])
      expect(classifyRolloutError(new InferenceHttpError(status, "http://x", ""))).toBe(
        "retryable",
      );
    for (const status of [400, 401, 404, 413, 422])
      expect(classifyRolloutError(new InferenceHttpError(status, "http://x", ""))).toBe(
        "permanent",
      );
    expect(classifyRolloutError(new ApiError("HTTP 503", 503, ""))).toBe("retryable");
    expect(classifyRolloutError(new ApiError("HTTP 422", 422, ""))).toBe("permanent");
  });

  it("classes network failures, timeouts and unusable responses as retryable", () => {
    expect(classifyRolloutError(new TypeError("fetch failed"))).toBe("retryable");
    expect(classifyRolloutError(new TypeError("Network connection lost."))).toBe("retryable");
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), {
      code: "ECONNREFUSED",
    });
    expect(classifyRolloutError(new TypeError("failed", { cause: refused }))).toBe("retryable");
    // A TypeError that names no bug: maybe a body cut mid-stream, so retried.
    expect(classifyRolloutError(new TypeError("Body is unusable"))).toBe("retryable");
    expect(classifyRolloutError(new DOMException("timed out", "TimeoutError"))).toBe("retryable");
    expect(classifyRolloutError(new RolloutTimeoutError("too slow"))).toBe("retryable");
    expect(classifyRolloutError(new InferenceProtocolError("bad JSON"))).toBe("retryable");
    // Unknown errors get bounded retries (then a dead letter).
    expect(classifyRolloutError(new Error("something odd"))).toBe("retryable");
  });

  it("classes bugs and groups that can never be valid as permanent", () => {
    expect(classifyRolloutError(new TypeError("Cannot read properties of undefined"))).toBe(
      "permanent",
    );
    expect(classifyRolloutError(new TypeError("env.score is not a function"))).toBe("permanent");
    expect(classifyRolloutError(new ReferenceError("x is not defined"))).toBe("permanent");
    expect(classifyRolloutError(new RangeError("Invalid array length"))).toBe("permanent");
    expect(classifyRolloutError(new InvalidGroupError("sequence 0 is empty"))).toBe("permanent");
    const zod = new Error("invalid config");
    zod.name = "ZodError";
    expect(classifyRolloutError(zod)).toBe("permanent");
    expect(classifyRolloutError("a thrown string")).toBe("permanent");
  });
});

describe("runRolloutItem", () => {
  it("records scores, validates and hands valid groups to submit with their index", async () => {
    const env = scripted();
    const { result, submitted } = await run(env, "two-groups-one-identical");
    expect(result).toMatchObject({
      kind: "submitted",
      submitted: "receipt",
      groups: 1,
      drops: ["all scores identical (1)"],
      scores: [1, 1, 1, 0],
    });
    // Index 1: the first group was dropped, and indexes key idempotent submissions.
    expect(submitted).toHaveLength(1);
    expect(submitted[0]!.map((g) => g.index)).toEqual([1]);
    expect(submitted[0]![0]!.group.overrides).toBeNull();
    expect(env.recorded).toEqual([[1, 1, 1, 0]]);
    expect(env.cleanups).toBe(1);
  });

  it("returns the backlog collectTrajectories asked for", async () => {
    const { result } = await run(scripted(), "ok-then-more");
    expect(result).toMatchObject({ kind: "submitted", backlog: ["ok"] });
  });

  it("drops a DropGroupError from collectTrajectories or postprocessHistories with its reason", async () => {
    const env = scripted();
    const collect = await run(env, "drop");
    expect(collect.result).toEqual({
      kind: "dropped",
      reason: "only 1 of 3 judges answered",
      by: "env",
      drops: ["only 1 of 3 judges answered"],
      scores: [],
      backlog: [],
    });
    expect(collect.submitted).toEqual([]);
    env.dropInPostprocess = true;
    const post = await run(env, "ok");
    expect(post.result).toMatchObject({ kind: "dropped", reason: "length penalty left nothing" });
    expect(env.cleanups).toBe(2);
  });

  it("drops an item that returned no group", async () => {
    const { result } = await run(scripted(), "none");
    expect(result).toMatchObject({ kind: "dropped", by: "env", drops: ["no group returned"] });
  });

  it("drops when every group fails validation, after recording its scores", async () => {
    const env = scripted();
    const { result, submitted } = await run(env, "identical");
    expect(result).toMatchObject({
      kind: "dropped",
      by: "validation",
      reason: "all scores identical (0.5)",
      scores: [0.5, 0.5],
    });
    expect(submitted).toEqual([]);
    expect(env.recorded).toEqual([[0.5, 0.5]]);
  });

  it("fails permanently on a group that can never be valid, submitting none of the item's groups", async () => {
    for (const item of ["ragged", "ragged-beside-valid"] as const) {
      const { result, submitted } = await run(scripted(), item);
      expect(result).toMatchObject({ kind: "permanent" });
      if (result.kind !== "permanent") throw new Error("unreachable");
      expect(result.error).toBeInstanceOf(InvalidGroupError);
      expect(result.message).toMatch(/masks length differs/);
      expect(submitted).toEqual([]);
    }
    // The backlog survives a failure (Node runtimes still run it).
    expect((await run(scripted(), "ragged")).result).toMatchObject({ backlog: ["ok"] });
  });

  it("classes a bug in the env as permanent", async () => {
    const { result } = await run(scripted(), "bug");
    expect(result).toMatchObject({ kind: "permanent" });
  });

  it("classes submit failures by status", async () => {
    const failingWith = (status: number) => ({
      submit: async () => {
        throw new ApiError(`scored_data: HTTP ${status}`, status, "");
      },
    });
    expect((await run(scripted(), "ok-then-more", failingWith(503))).result).toMatchObject({
      kind: "retryable",
      message: "scored_data: HTTP 503",
      backlog: ["ok"],
    });
    expect((await run(scripted(), "ok", failingWith(422))).result).toMatchObject({
      kind: "permanent",
    });
  });

  it("times out collectTrajectories as a retryable failure", async () => {
    const env = scripted();
    const { result } = await run(env, "hang", { collectTimeoutSeconds: 0.02 });
    expect(result).toMatchObject({
      kind: "retryable",
      message: "collectTrajectories(scripted) exceeded worker_timeout (0.02 s)",
    });
    expect(env.cleanups).toBe(1);
  });

  it("discards the work of a cancelled item without recording scores", async () => {
    const env = scripted();
    const { result, submitted } = await run(env, "ok", { cancelled: () => true });
    expect(result).toEqual({ kind: "cancelled" });
    expect(submitted).toEqual([]);
    expect(env.recorded).toEqual([]);
    expect(env.cleanups).toBe(1);
  });

  it("leaves recordScores to the caller when asked, still returning the scores", async () => {
    const env = scripted();
    const { result } = await run(env, "ok", { recordScores: false });
    expect(result).toMatchObject({ kind: "submitted", scores: [1, 0] });
    expect(env.recorded).toEqual([]);
  });

  it("ignores a failing cleanup", async () => {
    const env = scripted();
    env.failCleanup = true;
    expect((await run(env, "ok")).result).toMatchObject({ kind: "submitted" });
  });
});

describe("drops counted alike in serve and process", () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });

  const items: Script[] = ["drop", "identical", "none", "ok", "ragged"];
  const expectedReasons = {
    "only N of N judges answered": 1,
    "all scores identical (N)": 1,
    "no group returned": 1,
  };

  it("processEnv: drops by reason, failures apart", async () => {
    const progress = await processEnv(scripted().withItems(items), {
      groups: 100,
      onGroup: () => {},
      validation: { ensureScoresAreNotSame: true },
    });
    // "ok" and the "ok" from the failed "ragged" item's backlog.
    expect(progress.produced).toBe(2);
    expect(progress.dropped).toBe(3);
    expect(progress.failures).toBe(1);
    const isError = ([key]: [string, number]) => key.startsWith("error: ");
    const entries = Object.entries(progress.dropReasons);
    expect(Object.fromEntries(entries.filter((e) => !isError(e)))).toEqual(expectedReasons);
    expect(entries.filter(isError).map(([, n]) => n)).toEqual([1]);
  });

  it("serveEnv: the same drops by reason, the invalid group a permanent worker error", async () => {
    const api = await startFakeAtropos({ batchSize: 64 });
    closers.push(api.close);
    const client = new RolloutApiClient({
      url: api.url,
      token: "secret",
      getWithBody: nodeGetWithBody,
    });
    const errors: (string | undefined)[] = [];
    const summary = await serveEnv(scripted({ max_num_workers: 2 }).withItems(items), client, {
      pollIntervalMs: 2,
      stopWhenExhausted: true,
      signal: AbortSignal.timeout(10_000),
      onEvent: (e) => {
        if (e.type === "worker_error") errors.push(e.errorClass);
      },
    });
    expect(summary.exitReason).toBe("exhausted");
    expect(summary.dropReasons).toEqual(expectedReasons);
    expect(summary.groupsDropped).toBe(3);
    expect(summary.groupsSubmitted).toBe(2);
    expect(summary.workerErrors).toBe(1);
    expect(errors).toEqual(["permanent"]);
  });
});
