/**
 * The queue path under inference faults, on the real local platform: `npm run dev` (EnvFeeder
 * DOs, Queues, consumers, D1/R2) against the inference simulator over real HTTP, with 500s,
 * requests that never answer and bodies cut off mid-way. Items are retried, groups still arrive,
 * and nothing reaches the trainer twice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulator } from "../../src/sim/server";
import { type DevServer, postJson, REGISTRATION, startDevServer } from "./harness";

let dev: DevServer;
let sim: Awaited<ReturnType<typeof startSimulator>>;

// The simulator's schedule is deterministic: among the first 20 generation requests these rates
// give 3 errors, 2 timeouts and 3 truncated bodies.
const FAULTS = { errorRate: 0.15, timeoutRate: 0.1, truncateRate: 0.15 };
const BATCH_SIZE = 8;
const BATCHES = 6;

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 11, correctProbability: 0.5, faults: FAULTS });
  dev = await startDevServer();
});

afterAll(async () => {
  await dev?.stop();
  await sim?.close();
});

interface LeasedGroup {
  tokens: number[][];
  scores: number[];
  env_id: number;
}

interface RunStats {
  step: number;
  envs: { items_succeeded: number | null; items_failed: number | null }[];
  dead_letters: { count: number };
}

describe("env workers under inference faults", () => {
  it("retries failed inference, delivers every batch, and never duplicates a group", async () => {
    await postJson(`${dev.url}/register`, { ...REGISTRATION, batch_size: BATCH_SIZE });
    const started = await postJson(`${dev.url}/v1/runs/default/env-workers`, {
      env: "gsm8k_lite",
      config: { group_size: 4, max_num_workers: 4 },
      inference: [
        {
          base_url: `${sim.url}/v1`,
          // The form written before server_type had one value per server: still parses (= "vllm").
          server_type: "vllm",
          vllm_mode: "openai",
          model_name: "sim-policy",
          tokenizer_name: "qwen3",
          // Seconds: a request the simulator never answers fails fast and is retried.
          timeout: 2,
        },
      ],
    });
    expect(started.status, started.text).toBe(200);

    const seen = new Set<string>();
    let batches = 0;
    const deadline = Date.now() + 150_000;
    while (batches < BATCHES && Date.now() < deadline) {
      const res = await fetch(`${dev.url}/v1/runs/default/batches/lease`, { method: "POST" });
      if (res.status === 204) {
        await res.arrayBuffer();
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      expect(res.status).toBe(200);
      const lease = (await res.json()) as {
        batch_id: string;
        lease_id: string;
        batch: LeasedGroup[];
      };
      expect(lease.batch.reduce((sum, g) => sum + g.tokens.length, 0)).toBe(BATCH_SIZE);
      for (const g of lease.batch) {
        expect(g.scores).toHaveLength(g.tokens.length);
        const key = JSON.stringify([g.tokens, g.scores]);
        expect(seen.has(key), "a group was delivered twice").toBe(false);
        seen.add(key);
      }
      const ack = await postJson(`${dev.url}/v1/runs/default/batches/${lease.batch_id}/ack`, {
        lease_id: lease.lease_id,
      });
      expect(ack.status).toBe(200);
      batches++;
    }
    expect(batches).toBe(BATCHES);

    // Every kind of fault really happened, so the batches above were produced through retries.
    const simStats = sim.stats();
    const seenFaults = JSON.stringify(simStats.faults);
    expect(simStats.faults.error, seenFaults).toBeGreaterThan(0);
    expect(simStats.faults.timeout, seenFaults).toBeGreaterThan(0);
    expect(simStats.faults.truncate, seenFaults).toBeGreaterThan(0);

    const stats = (await (await fetch(`${dev.url}/v1/runs/default/stats`)).json()) as RunStats;
    expect(stats.step).toBe(BATCHES);
    expect(stats.dead_letters.count).toBe(0);
    expect(stats.envs.some((e) => (e.items_succeeded ?? 0) > 0)).toBe(true);
  });
});
