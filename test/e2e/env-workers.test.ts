/**
 * The whole loop on the local platform: EnvFeeder Durable Objects feed items to the queue,
 * consumer invocations call the inference simulator over real HTTP, groups land in the API,
 * and a trainer leases and acks exact-size batches.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulator } from "../../src/sim/server";
import { type DevServer, postJson, REGISTRATION, startDevServer } from "./harness";

let dev: DevServer;
let sim: Awaited<ReturnType<typeof startSimulator>>;

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 7, correctProbability: 0.5 });
  dev = await startDevServer();
});

afterAll(async () => {
  await dev?.stop();
  await sim?.close();
});

interface Group {
  tokens: number[][];
  masks: number[][];
  scores: number[];
  inference_logprobs: number[][];
  env_id: number;
}

describe("env workers on Queues and Durable Objects", () => {
  it("produces groups with exact tokens, masks and logprobs that a trainer leases and acks", async () => {
    await postJson(`${dev.url}/register`, { ...REGISTRATION, batch_size: 8 });
    const inference = [
      {
        base_url: `${sim.url}/v1`,
        // vLLM's token-in/token-out endpoint, from the Worker (the simulator answers it).
        server_type: "vllm-generate",
        model_name: "sim-policy",
        tokenizer_name: "qwen3",
      },
    ];
    for (const env of ["gsm8k_lite", "letter_counting"]) {
      const started = await postJson(`${dev.url}/v1/runs/default/env-workers`, {
        env,
        config: { group_size: 4, max_num_workers: 4 },
        inference,
      });
      expect(started.status, started.text).toBe(200);
    }
    const bad = await postJson(`${dev.url}/v1/runs/default/env-workers`, {
      env: "nope",
      inference,
    });
    expect(bad.status).toBe(422);

    const seen = new Set<string>();
    const envsSeen = new Set<number>();
    let batches = 0;
    const deadline = Date.now() + 120_000;
    while (batches < 3 && Date.now() < deadline) {
      const res = await fetch(`${dev.url}/v1/runs/default/batches/lease`, { method: "POST" });
      if (res.status === 204) {
        await res.arrayBuffer();
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      expect(res.status).toBe(200);
      const lease = (await res.json()) as { batch_id: string; lease_id: string; batch: Group[] };
      expect(lease.batch.reduce((s, g) => s + g.tokens.length, 0)).toBe(8);
      for (const g of lease.batch) {
        envsSeen.add(g.env_id);
        expect(g.scores).toHaveLength(g.tokens.length);
        for (let i = 0; i < g.tokens.length; i++) {
          const tokens = g.tokens[i]!;
          const masks = g.masks[i]!;
          const logprobs = g.inference_logprobs[i]!;
          expect(masks).toHaveLength(tokens.length);
          expect(logprobs).toHaveLength(tokens.length);
          const firstTrained = masks.findIndex((m) => m !== -100);
          expect(firstTrained).toBeGreaterThan(0);
          for (let t = 0; t < tokens.length; t++) {
            if (masks[t] === -100) expect(logprobs[t]).toBe(1);
            else {
              expect(masks[t]).toBe(tokens[t]);
              expect(logprobs[t]).toBeLessThanOrEqual(0);
            }
          }
        }
        // Identical rollouts can happen; an identical whole group delivered twice must not.
        const key = JSON.stringify([g.tokens, g.scores]);
        expect(seen.has(key)).toBe(false);
        seen.add(key);
      }
      const ack = await postJson(`${dev.url}/v1/runs/default/batches/${lease.batch_id}/ack`, {
        lease_id: lease.lease_id,
      });
      expect(ack.status).toBe(200);
      batches++;
    }
    expect(batches).toBe(3);
    const stats = (await (await fetch(`${dev.url}/v1/runs/default/stats`)).json()) as {
      step: number;
      envs: { items_succeeded: number | null }[];
    };
    expect(stats.step).toBe(3);
    expect(stats.envs.some((e) => (e.items_succeeded ?? 0) > 0)).toBe(true);
    // The Worker generated through the route of the server_type it was given.
    expect(sim.stats().byRoute["POST /inference/v1/generate"] ?? 0).toBeGreaterThan(0);
  });
});
