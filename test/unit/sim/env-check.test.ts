/**
 * runOnSimulator: the end-to-end check a project's env tests use (atropos-edge/node). It must
 * notice a constant reward and prompts that simulate() does not cover.
 */
import { describe, expect, it } from "vitest";
import {
  BaseEnv,
  BaseEnvConfigSchema,
  defineEnv,
  mergeIntoGroup,
  sampleChat,
  scoredItemFromNode,
} from "../../../src/sdk/env";
import { runOnSimulator } from "../../../src/sdk/node";

const question = (n: number) => `What is ${n} doubled? Reply with the number only.`;

/** Doubling, with a reward that can be made constant and a simulate() that can miss. */
function doublingEnv(opts: { constantReward?: boolean; simulateMatch?: (n: number) => string }) {
  class Doubling extends BaseEnv<number> {
    static override envName = "doubling";
    private next = 0;
    override async getNextItem() {
      return this.next++;
    }
    override async collectTrajectories(n: number) {
      const messages = [{ role: "user", content: question(n) }];
      const choices = await sampleChat(this.inference, this.tokenizer, messages, {
        n: this.config.group_size,
        max_tokens: 8,
      });
      const rollouts = choices.map((c) =>
        scoredItemFromNode(
          c.node,
          opts.constantReward ? 1 : c.text.trim() === String(2 * n) ? 1 : 0,
          { tokenizer: this.tokenizer, messages: c.messages },
        ),
      );
      return [mergeIntoGroup(rollouts), []] as const satisfies [unknown, number[]];
    }
  }
  return defineEnv(Doubling, BaseEnvConfigSchema, "double a number", {
    simulate: (n: number) => ({
      match: opts.simulateMatch ? opts.simulateMatch(n) : question(n),
      candidates: [
        { text: String(2 * n), label: "correct" },
        { text: String(n), label: "same" },
      ],
    }),
  });
}

describe("runOnSimulator", () => {
  it("rolls out N groups whose rewards vary, every prompt covered by simulate()", async () => {
    const run = await runOnSimulator(doublingEnv({}), { groups: 6, config: { group_size: 4 } });
    expect(run.groups).toHaveLength(6);
    // Items in flight when the 6th group arrived count too: every rollout the env scored.
    expect(run.scores.length).toBeGreaterThanOrEqual(24);
    expect(run.scores.length % 4).toBe(0);
    expect(run.rewardsVary).toBe(true);
    expect(run.distinctScores).toEqual([0, 1]);
    expect(run.prompts).toBeGreaterThanOrEqual(6);
    expect(run.uncoveredPrompts).toEqual([]);
    expect(run.failedItems).toBe(0);
  }, 60_000);

  it("reports a constant reward and prompts simulate() does not match", async () => {
    const run = await runOnSimulator(
      doublingEnv({ constantReward: true, simulateMatch: (n) => `What is ${n} tripled?` }),
      { groups: 3, config: { group_size: 2 } },
    );
    expect(run.rewardsVary).toBe(false);
    expect(run.distinctScores).toEqual([1]);
    expect(run.uncoveredPrompts.length).toBe(run.prompts);
    expect(run.uncoveredPrompts[0]).toContain("doubled?");
  }, 60_000);
});
