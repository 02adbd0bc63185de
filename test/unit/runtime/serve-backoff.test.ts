/**
 * serveEnv with an env whose reward gives every answer the same score: every group is dropped by
 * ensure_scores_are_not_same, and after 200 consecutive drops the runtime starts at most one item
 * per second and emits the reason every 10 s. The runtime's clock is injected and moved by hand
 * (the loop itself still polls on real 1 ms timers), so no test waits 10 real seconds.
 */
import { afterEach, describe, expect, it } from "vitest";
import { BaseEnv, type TrajectoryResult } from "../../../src/env-sdk/base-env";
import { type BaseEnvConfig, BaseEnvConfigSchema } from "../../../src/env-sdk/config";
import { RolloutApiClient } from "../../../src/env-sdk/runtime/api-client";
import { nodeGetWithBody } from "../../../src/env-sdk/runtime/node-get-with-body";
import { type ServeEvent, serveEnv } from "../../../src/env-sdk/runtime/serve";
import { CharTokenizer, FakeInference } from "../envs/fakes";
import { startFakeAtropos } from "./fake-atropos";

/** Asks the model a question and rewards every answer with 0. */
class ConstantRewardEnv extends BaseEnv<number, BaseEnvConfig> {
  static override envName = "constant_reward";
  started = 0;

  async getNextItem(): Promise<number> {
    return this.started++;
  }

  override async collectTrajectory(item: number): Promise<TrajectoryResult<number>> {
    const prompt = `What is ${item} + ${item}?`;
    const res = await this.inference.chatCompletion({
      messages: [{ role: "user", content: prompt }],
      n: 1,
      max_tokens: 8,
    });
    const promptTokens = this.tokenizer.encode(prompt);
    const answer = this.tokenizer.encode(res.choices[0]?.message.content ?? "");
    const reward = (_answer: number[]) => 0;
    return [
      {
        tokens: [...promptTokens, ...answer],
        masks: [...promptTokens.map(() => -100), ...answer],
        scores: reward(answer),
      },
      [],
    ];
  }
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; !condition(); i++) {
    if (i > 2000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

const REASON =
  "all scores identical (0) in the last 200 groups: your reward gives every answer the same score; backing off to 1 item/s until a group is kept";

describe("serveEnv drop back-off", () => {
  it("after 200 identical-score drops: at most 1 item/s, the reason every 10 s", async () => {
    const api = await startFakeAtropos({ batchSize: 64 });
    closers.push(api.close);
    const tokenizer = new CharTokenizer();
    const env = new ConstantRewardEnv(
      BaseEnvConfigSchema.parse({ group_size: 2, max_num_workers: 4 }),
      new FakeInference(tokenizer),
      tokenizer,
    );
    let clock = 0;
    const events: ServeEvent[] = [];
    let drops = 0;
    const reasons: { at: number; message: string }[] = [];
    const abort = new AbortController();
    const polls = () => api.state.requests.filter((r) => r.path === "/status-env").length;
    /** Waits for the loop to poll /status-env 5 more times: 4 ticks that could start an item. */
    const settle = async () => {
      const target = polls() + 5;
      await until(() => polls() >= target, "5 more polls");
    };
    const served = serveEnv(
      env,
      new RolloutApiClient({ url: api.url, getWithBody: nodeGetWithBody }),
      {
        signal: abort.signal,
        pollIntervalMs: 1,
        now: () => clock,
        onEvent: (e) => {
          events.push(e);
          if (e.type === "dropped") drops++;
          if (e.type === "backing_off") reasons.push({ at: clock, message: e.message });
        },
      },
    );
    try {
      // Full speed until the 200th drop, all at clock 0.
      await until(() => reasons.length > 0, "the first back-off report");
      expect(reasons).toEqual([{ at: 0, message: REASON }]);
      expect(drops).toBeGreaterThanOrEqual(200);
      expect(events.filter((e) => e.type === "dropped")[0]).toEqual({
        type: "dropped",
        reason: "all scores identical (0)",
      });

      // Backing off: the clock stands still, so at most one more item starts however long the
      // loop keeps polling.
      await until(() => drops === env.started, "the items in flight to finish");
      const atBackoff = env.started;
      await settle();
      expect(env.started - atBackoff).toBeLessThanOrEqual(1);
      await until(() => drops === env.started, "that item to finish");

      // Then one item per second of the injected clock, and the reason every 10 s.
      const startedAt = env.started;
      for (let second = 1; second <= 25; second++) {
        const before = env.started;
        clock = second * 1000 - 1;
        await settle();
        expect(env.started).toBe(before);
        clock = second * 1000;
        await until(() => env.started === before + 1, `the item of second ${second}`);
        await until(() => drops === env.started, `the drop of second ${second}`);
        await settle();
        expect(env.started).toBe(before + 1);
      }
      expect(env.started - startedAt).toBe(25);
      expect(reasons.map((r) => r.at)).toEqual([0, 10_000, 20_000]);
      for (const r of reasons) expect(r.message).toBe(REASON);
    } finally {
      abort.abort();
      await served;
    }
  }, 30_000);
});
