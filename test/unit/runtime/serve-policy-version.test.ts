/**
 * A Node-served env stamps each group with the policy version current when its rollout started,
 * read from /status-env, not the one current when the group reaches the API.
 */
import { afterEach, describe, expect, it } from "vitest";
import { BaseEnv, type TrajectoryResult } from "../../../src/env-sdk/base-env";
import { type BaseEnvConfig, BaseEnvConfigSchema } from "../../../src/env-sdk/config";
import { RolloutApiClient } from "../../../src/env-sdk/runtime/api-client";
import { nodeGetWithBody } from "../../../src/env-sdk/runtime/node-get-with-body";
import { serveEnv } from "../../../src/env-sdk/runtime/serve";
import { CharTokenizer, FakeInference } from "../envs/fakes";
import { startFakeAtropos } from "./fake-atropos";

/** Each rollout waits for `release` before it finishes, so the version can move meanwhile. */
class SlowEnv extends BaseEnv<number, BaseEnvConfig> {
  static override envName = "slow";
  started = 0;
  release: () => void = () => {};
  private gate = new Promise<void>((resolve) => {
    this.release = resolve;
  });

  async getNextItem(): Promise<number | null> {
    return this.started < 1 ? this.started++ : null;
  }

  override async collectTrajectory(item: number): Promise<TrajectoryResult<number>> {
    await this.gate;
    const tokens = this.tokenizer.encode(`item ${item} ${Math.random()}`);
    return [{ tokens, masks: tokens, scores: Math.random() }, []];
  }
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe("serveEnv policy versions", () => {
  it("stamps the version of the status read when the rollout started", async () => {
    const api = await startFakeAtropos({ batchSize: 64, policyVersion: 3 });
    closers.push(api.close);
    const tokenizer = new CharTokenizer();
    const env = new SlowEnv(
      BaseEnvConfigSchema.parse({ group_size: 2, max_num_workers: 1 }),
      new FakeInference(tokenizer),
      tokenizer,
    );
    const abort = new AbortController();
    const served = serveEnv(
      env,
      new RolloutApiClient({ url: api.url, getWithBody: nodeGetWithBody }),
      { signal: abort.signal, pollIntervalMs: 1 },
    );
    try {
      for (let i = 0; env.started === 0; i++) {
        if (i > 2000) throw new Error("the rollout never started");
        await new Promise((r) => setTimeout(r, 2));
      }
      // The trainer moves on while the rollout is still sampling.
      api.state.policyVersion = 7;
      // The loop reads the new version (two status answers after the change) before release.
      const polls = () => api.state.requests.filter((r) => r.path === "/status-env").length;
      const target = polls() + 2;
      for (let i = 0; polls() < target; i++) {
        if (i > 2000) throw new Error("the loop stopped polling");
        await new Promise((r) => setTimeout(r, 2));
      }
      env.release();
      for (let i = 0; api.state.received.length === 0; i++) {
        if (i > 2000) throw new Error("no group was submitted");
        await new Promise((r) => setTimeout(r, 2));
      }
      expect(api.state.received.map((g) => g.policy_version)).toEqual([3]);
    } finally {
      abort.abort();
      await served;
    }
  });
});
