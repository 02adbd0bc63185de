/**
 * registerItemsAhead: for `start --workers`, the candidates of the items an EnvFeeder will hand out
 * are registered with the simulator's toy policy up front, from an instance with the same config.
 */
import { describe, expect, it } from "vitest";
import { registerItemsAhead } from "../../../src/cli/simulated-env";
import type { SimulatedItem } from "../../../src/env-sdk/simulate";
import { getEnvDefinition } from "../../../src/envs/index";
import { ToyPolicy } from "../../../src/sim/policy";
import { CharTokenizer, FakeInference } from "../envs/fakes";

function instance(name: string, config: Record<string, unknown>) {
  const tokenizer = new CharTokenizer();
  return getEnvDefinition(name).create(config, new FakeInference(tokenizer), tokenizer);
}

describe("registerItemsAhead", () => {
  it("registers the items another instance with the same config hands out, in order", async () => {
    const def = getEnvDefinition("gsm8k_lite");
    const policy = new ToyPolicy();
    const seen: SimulatedItem[] = [];
    const sink = {
      register: (env: string, simulated: SimulatedItem) => {
        expect(env).toBe("gsm8k_lite");
        seen.push(simulated);
        policy.register(env, simulated);
      },
    };
    const config = { group_size: 8, shuffle_seed: 3 };
    expect(await registerItemsAhead(instance("gsm8k_lite", config), def, sink, 50)).toBe(50);
    expect(seen).toHaveLength(50);

    // The feeder's own instance (same config) issues these items: each prompt finds its answers.
    const feeder = instance("gsm8k_lite", config);
    await feeder.setup();
    for (let i = 0; i < 50; i++) {
      const item = (await feeder.getNextItem())!;
      const simulated = def.simulate!(item);
      expect(seen[i]!.match).toBe(simulated.match);
      const found = policy.candidatesFor(`<|im_start|>user\n${simulated.match}<|im_end|>`);
      expect(found?.env).toBe("gsm8k_lite");
    }
  });

  it("registers nothing for an env without simulate()", async () => {
    const def = { ...getEnvDefinition("gsm8k_lite"), simulate: undefined };
    const registered: unknown[] = [];
    const sink = { register: (_env: string, s: SimulatedItem) => registered.push(s) };
    expect(await registerItemsAhead(instance("gsm8k_lite", {}), def, sink, 10)).toBe(0);
    expect(registered).toEqual([]);
  });
});
