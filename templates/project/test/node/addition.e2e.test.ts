/**
 * End to end in Node: N groups of the env rolled out against the inference simulator (its
 * `simulate()` playing the policy), as `npm start` runs it. Copy this for your own env: a reward
 * that never varies teaches nothing (GRPO drops such groups), and a prompt that `simulate()` does
 * not match gets a generic answer, so `npm start` would train on noise.
 */
import { runOnSimulator } from "atropos-edge/node";
import { describe, expect, it } from "vitest";
import addition from "../../src/envs/addition";

describe("addition against the simulator", () => {
  it("gives rewards that vary, on prompts simulate() covers", async () => {
    const run = await runOnSimulator(addition, { groups: 8, config: { group_size: 4 } });
    expect(run.groups).toHaveLength(8);
    expect(run.failedItems).toBe(0);
    expect(run.rewardsVary).toBe(true);
    expect(run.uncoveredPrompts).toEqual([]);
  });
});
