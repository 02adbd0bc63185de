import { afterEach, describe, expect, it } from "vitest";
import type { ScoredDataGroup } from "../../../src/core/wire/group-types";
import { apiBasePath, RolloutApiClient } from "../../../src/env-sdk/runtime/api-client";
import { nodeGetWithBody } from "../../../src/env-sdk/runtime/node-get-with-body";
import { serveEnv } from "../../../src/env-sdk/runtime/serve";
import { getEnvDefinition } from "../../../src/envs/index";
import { CharTokenizer, FakeInference } from "../envs/fakes";
import { startFakeAtropos } from "./fake-atropos";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

async function fake(options: Parameters<typeof startFakeAtropos>[0] = {}) {
  const api = await startFakeAtropos(options);
  closers.push(api.close);
  const client = new RolloutApiClient({
    url: api.url,
    token: "secret",
    getWithBody: nodeGetWithBody,
    baseDelayMs: 5,
    sleep: (ms) => new Promise((r) => setTimeout(r, Math.min(ms, 5))),
  });
  return { api, client };
}

const group = (n: number, len = 3): ScoredDataGroup => ({
  tokens: Array.from({ length: n }, (_, i) => Array.from({ length: len }, (_, p) => i * 1000 + p)),
  masks: Array.from({ length: n }, () => Array.from({ length: len }, () => -100)),
  scores: Array.from({ length: n }, (_, i) => i),
});

describe("RolloutApiClient", () => {
  it("builds run-scoped base paths", () => {
    expect(apiBasePath("http://h:1/", "default")).toBe("http://h:1");
    expect(apiBasePath("http://h:1", "exp a")).toBe("http://h:1/runs/exp%20a");
  });

  it("registers after waiting for the trainer and sends GET /status-env with a JSON body", async () => {
    const { api, client } = await fake({ registerWaits: 2 });
    const reg = await client.registerEnv(
      {
        max_token_length: 512,
        desired_name: "t",
        weight: 1,
        group_size: 2,
        min_batch_allocation: null,
      },
      { pollMs: 1 },
    );
    expect(reg.env_id).toBe(0);
    expect(api.state.registerCalls).toBe(3);
    expect(await client.info()).toEqual({ batch_size: 8, max_token_len: 4096 });
    const status = await client.statusEnv(0);
    expect(status.current_step).toBe(0);
    const req = api.state.requests.find((r) => r.path === "/status-env")!;
    expect(req.method).toBe("GET");
    expect(req.json).toEqual({ env_id: 0 });
    expect(req.headers.authorization).toBe("Bearer secret");
  });

  it("gzips large bodies, keeps one Idempotency-Key across retries and dedupes retried 5xx", async () => {
    const { api, client } = await fake({ failScoredPosts: 1 });
    const big = group(2, 400);
    const res = await client.submitGroups(big, 0);
    expect(res.ok).toBe(true);
    expect(res.gzipped).toBe(true);
    const posts = api.state.requests.filter((r) => r.path === "/scored_data");
    expect(posts).toHaveLength(2); // one 503, one retry
    expect(posts[0]!.headers["idempotency-key"]).toBe(posts[1]!.headers["idempotency-key"]);
    expect(posts[0]!.headers["content-encoding"]).toBe("gzip");
    expect(posts[0]!.wireBytes).toBeLessThan(JSON.stringify(big).length);
    expect((posts[0]!.json as ScoredDataGroup).env_id).toBe(0);
    expect(api.state.accepted).toBe(1); // the retry was deduplicated
    // The same group submitted again later is a new submission, not a retry.
    const again = await client.submitGroups(big, 0);
    expect(again.idempotencyKey).not.toBe(res.idempotencyKey);
    expect(api.state.accepted).toBe(2);

    const small = await client.submitGroups([group(1), group(1)], 0);
    expect(small.gzipped).toBe(false);
    expect(api.state.requests.at(-1)!.path).toBe("/scored_data_list");
  });

  it("does not retry 4xx", async () => {
    const { api, client } = await fake({ rejectScoredWith4xx: true });
    const res = await client.submitGroups(group(2), 0);
    expect(res).toMatchObject({ ok: false, status: 422 });
    expect(api.state.requests.filter((r) => r.path === "/scored_data")).toHaveLength(1);
  });

  it("checks answers against the API's schemas and names the field that does not fit", async () => {
    const answers: Record<string, unknown> = {
      "/info": { batch_size: "64", max_token_len: 512 },
      "/status-env": {
        current_step: 0,
        queue_size: 0,
        unallocated_fraction: 1,
        self_queue_size: 0,
        max_group_size: 8,
        env_weight: 1,
      },
    };
    const client = new RolloutApiClient({
      url: "http://api.test",
      attempts: 1,
      fetch: async (input) => {
        const path = new URL(String(input)).pathname;
        return Response.json(answers[path] ?? {});
      },
    });
    await expect(client.info()).rejects.toThrow(/info: .*batch_size/);
    // The original server sends no policy_version: that answer is still a status.
    await expect(client.statusEnv(0)).resolves.toMatchObject({ max_group_size: 8 });
    answers["/status-env"] = { current_step: 0 };
    await expect(client.statusEnv(0)).rejects.toThrow(/status-env: .*queue_size/);
  });

  it("retries network errors and then fails", async () => {
    let calls = 0;
    const client = new RolloutApiClient({
      url: "http://127.0.0.1:9",
      attempts: 3,
      sleep: async () => {},
      fetch: async () => {
        calls++;
        throw new TypeError("fetch failed");
      },
    });
    await expect(client.info()).rejects.toThrow(/fetch failed/);
    expect(calls).toBe(3);
  });
});

describe("serveEnv", () => {
  it("registers, keeps workers busy, submits valid groups and stops at total_steps", async () => {
    const { api, client } = await fake({ batchSize: 8 });
    const tokenizer = new CharTokenizer();
    const inference = new FakeInference(tokenizer, { correctProbability: 0.5 });
    const env = getEnvDefinition("letter_counting").create(
      { group_size: 4, total_steps: 3, max_num_workers: 4, steps_per_eval: 2 },
      inference,
      tokenizer,
    );
    const saved: number[] = [];
    const summary = await serveEnv(env, client, {
      pollIntervalMs: 2,
      maxLoops: 2000,
      checkpointStore: { load: async () => null, save: async (step) => void saved.push(step) },
      signal: AbortSignal.timeout(20_000),
    });
    expect(summary.exitReason).toBe("terminated");
    expect(summary.groupsSubmitted).toBeGreaterThanOrEqual(6);
    expect(api.state.step).toBeGreaterThanOrEqual(3);
    expect(saved).toContain(2);
    expect(summary.evaluations.map((e) => e.step)).toContain(2);
    expect(inference.weights.length).toBeGreaterThan(0);
    expect(api.state.requests.at(-1)!.path).toBe("/disconnect-env");
    for (const r of api.state.requests.filter((q) => q.path === "/scored_data"))
      expect(r.headers["idempotency-key"]).toMatch(/^[0-9a-f]{32}$/);
  });

  it("pauses when the queue is M batches ahead and stops on abort", async () => {
    const { api, client } = await fake({ batchSize: 4, trainerPaused: true });
    const tokenizer = new CharTokenizer();
    const env = getEnvDefinition("letter_counting").create(
      { group_size: 2, max_batches_offpolicy: 2, max_num_workers: 2, total_steps: 100 },
      new FakeInference(tokenizer),
      tokenizer,
    );
    const controller = new AbortController();
    const events: string[] = [];
    const run = serveEnv(env, client, {
      pollIntervalMs: 2,
      signal: controller.signal,
      onEvent: (e) => events.push(e.type),
    });
    for (let i = 0; i < 200 && !events.includes("paused") && api.state.queue.length < 4; i++)
      await new Promise((r) => setTimeout(r, 10));
    // Then 20 more polls of /status-env: enough ticks for any overshoot to show.
    const polls = () => api.state.requests.filter((r) => r.path === "/status-env").length;
    const target = polls() + 20;
    for (let i = 0; i < 2000 && polls() < target; i++) await new Promise((r) => setTimeout(r, 2));
    controller.abort();
    const summary = await run;
    expect(summary.exitReason).toBe("aborted");
    // never more than M·B sequences (+ groups in flight when the limit was reached)
    const queued = api.state.queue.reduce((a, g) => a + g.tokens.length, 0);
    expect(queued).toBeGreaterThanOrEqual(8);
    expect(queued).toBeLessThanOrEqual(8 + 2 * 2);
  });

  it("keeps generating while submissions are slow, with at most 2 × max_num_workers pending", async () => {
    const { api } = await fake({ batchSize: 64 });
    let pendingPosts = 0;
    let maxPendingPosts = 0;
    const client = new RolloutApiClient({
      url: api.url,
      token: "secret",
      getWithBody: nodeGetWithBody,
      // A slow API: every submission takes 150 ms.
      fetch: async (input, init) => {
        if (!String(input).includes("/scored_data")) return fetch(input, init);
        pendingPosts++;
        maxPendingPosts = Math.max(maxPendingPosts, pendingPosts);
        await new Promise((r) => setTimeout(r, 150));
        try {
          return await fetch(input, init);
        } finally {
          pendingPosts--;
        }
      },
    });
    const tokenizer = new CharTokenizer();
    const env = getEnvDefinition("letter_counting").create(
      { group_size: 2, max_num_workers: 2, total_steps: 1000, max_batches_offpolicy: 100 },
      new FakeInference(tokenizer),
      tokenizer,
    );
    const controller = new AbortController();
    let submitted = 0;
    const run = serveEnv(env, client, {
      pollIntervalMs: 5,
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === "submitted" && e.ok) submitted += e.groups;
      },
    });
    // Until submissions overlapped and enough groups went out (not a fixed second).
    for (let i = 0; i < 1000 && (submitted <= 10 || maxPendingPosts <= 2); i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    controller.abort();
    const summary = await run;
    // Slots are freed once a group is generated: more submissions overlap than there are slots,
    // but never more than twice as many (then workers wait for the API).
    expect(maxPendingPosts).toBeGreaterThan(2);
    expect(maxPendingPosts).toBeLessThanOrEqual(4);
    expect(summary.groupsSubmitted).toBeGreaterThan(10);
  });
});
