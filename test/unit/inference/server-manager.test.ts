import { afterEach, describe, expect, it } from "vitest";
import { AdaptiveSemaphore } from "../../../src/inference/adaptive-semaphore";
import { splitN } from "../../../src/inference/retry";
import { ServerManager } from "../../../src/inference/server-manager";
import { type Simulator, type SimulatorOptions, startSimulator } from "../../../src/sim/server";

const sims: Simulator[] = [];
async function sim(options: SimulatorOptions = {}): Promise<Simulator> {
  const s = await startSimulator(options);
  sims.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
});

const fastRetry = { backoff: { baseMs: 5, maxMs: 20 } };
const server = (s: Simulator, extra: Record<string, unknown> = {}) => ({
  base_url: `${s.url}/v1`,
  server_type: "vllm" as const,
  model_name: "sim",
  tokenizer_name: "qwen3",
  ...extra,
});

describe("AdaptiveSemaphore", () => {
  it("caps concurrency at ceil(capacity × weight) like Atropos", async () => {
    for (const [weight, peak] of [
      [1, 10],
      [0.5, 5],
      [0.2, 2],
      [0.05, 1],
      [0.01, 1],
    ] as const) {
      const sem = new AdaptiveSemaphore(10);
      sem.setWeight(weight);
      let held = 0;
      while (held < 20 && sem.tryAcquire()) held++;
      expect(held).toBe(peak);
    }
  });

  it("releases waiters in order and honours abort", async () => {
    const sem = new AdaptiveSemaphore(1);
    await sem.acquire();
    const order: string[] = [];
    const controller = new AbortController();
    const aborted = sem.acquire(controller.signal).catch(() => order.push("aborted"));
    const waiting = sem.acquire().then(() => order.push("granted"));
    controller.abort();
    await aborted;
    sem.release();
    await waiting;
    expect(order).toEqual(["aborted", "granted"]);
  });
});

describe("ServerManager", () => {
  it("splits n into chunks of max_n_completions and merges choices", async () => {
    const s = await sim();
    const manager = new ServerManager([server(s, { max_n_completions: 4 })]);
    expect(splitN(10, 4)).toEqual([4, 4, 2]);
    const result = await manager.tokensAndLogprobsCompletion({ prompt: "hello", n: 10 });
    expect(result.outputTokens).toHaveLength(10);
    expect(s.stats().byRoute["POST /v1/completions"]).toBe(3);
    const chat = await manager.chatCompletion({ messages: [{ role: "user", content: "x" }], n: 6 });
    expect(chat.choices.map((c) => c.index)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("chatCompletionWithTokens: the server's own prompt ids, n split and merged", async () => {
    const s = await sim();
    const manager = new ServerManager([server(s, { max_n_completions: 2 })]);
    const { chat, tokens } = await manager.chatCompletionWithTokens({
      messages: [{ role: "user", content: "x" }],
      n: 3,
    });
    expect(chat.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(tokens.outputTokens).toHaveLength(3);
    expect(tokens.outputLogprobs.map((l) => l.length)).toEqual(
      tokens.outputTokens.map((t) => t.length),
    );
    expect(tokens.promptTokens.length).toBeGreaterThan(0);
    expect(s.stats().byRoute["POST /v1/chat/completions"]).toBe(2);
    const sglang = new ServerManager([server(s, { server_type: "sglang" })]);
    await expect(
      sglang.chatCompletionWithTokens({ messages: [{ role: "user", content: "x" }] }),
    ).rejects.toThrow(/server_type vllm/);
  });

  it("retries 5xx faults with backoff and succeeds", async () => {
    const s = await sim({ faults: { errorRate: 0.5 } });
    const manager = new ServerManager([server(s)], fastRetry);
    for (let i = 0; i < 4; i++) {
      const result = await manager.tokensAndLogprobsCompletion({ prompt: `q${i}`, n: 1 });
      expect(result.outputTokens).toHaveLength(1);
    }
    // Faults hit requests #1, #3, #5: each of the last three calls needed one retry.
    expect(s.stats().faults.error).toBe(3);
    expect(s.stats().generationRequests).toBe(7);
  });

  it("retries truncated bodies and hung requests (per-request timeout)", async () => {
    const s = await sim({ faults: { truncateRate: 0.2, timeoutRate: 0.2 } });
    const manager = new ServerManager([server(s, { timeout: 0.3 })], {
      backoff: { baseMs: 5, maxMs: 20, maxAttempts: 6 },
    });
    const results = await Promise.all(
      [0, 1, 2, 3].map((i) => manager.tokensAndLogprobsCompletion({ prompt: `p${i}`, n: 1 })),
    );
    expect(results.every((r) => r.outputTokens.length === 1)).toBe(true);
    const { faults } = s.stats();
    expect(faults.truncate + faults.timeout).toBeGreaterThan(0);
  });

  it("does not retry 4xx and gives up after maxAttempts", async () => {
    const s = await sim({ faults: { errorRate: 1 } });
    const manager = new ServerManager([server(s)], fastRetry);
    await expect(manager.tokensAndLogprobsCompletion({ prompt: "x" })).rejects.toThrow(/500/);
    expect(s.stats().generationRequests).toBe(3);
    const ok = await sim();
    const strict = new ServerManager([server(ok)], fastRetry);
    await expect(
      strict.tokensAndLogprobsCompletion({ prompt: "", input_ids: [-1] }),
    ).rejects.toThrow(/400/);
    expect(ok.stats().generationRequests).toBe(1);
  });

  it("routes to the least-loaded healthy server and fails over from a dead one", async () => {
    const a = await sim({ latencyMs: 50 });
    const b = await sim({ latencyMs: 50 });
    const manager = new ServerManager([server(a), server(b)]);
    await Promise.all(
      Array.from({ length: 8 }, (_, i) => manager.tokensAndLogprobsCompletion({ prompt: `r${i}` })),
    );
    expect(a.stats().generationRequests).toBe(4);
    expect(b.stats().generationRequests).toBe(4);

    const dead = await sim({ faults: { errorRate: 1 } });
    const live = await sim();
    const failover = new ServerManager([server(dead), server(live)], {
      ...fastRetry,
      healthProbeIntervalMs: 60_000,
    });
    for (let i = 0; i < 3; i++) await failover.tokensAndLogprobsCompletion({ prompt: `f${i}` });
    expect(dead.stats().generationRequests).toBe(1); // marked unhealthy after its first failure
    expect(failover.stats()[0]?.healthy).toBe(false);
  });

  it("restores an unhealthy server through a bounded lazy health probe", async () => {
    const s = await sim({ faults: { errorRate: 1 } });
    const good = await sim();
    let now = 1_000_000;
    const manager = new ServerManager([server(s), server(good)], {
      ...fastRetry,
      healthProbeIntervalMs: 1000,
      now: () => now,
    });
    await manager.tokensAndLogprobsCompletion({ prompt: "a" }); // fault → server 0 unhealthy, retried on 1
    expect(manager.stats().map((x) => x.healthy)).toEqual([false, true]);
    await manager.tokensAndLogprobsCompletion({ prompt: "b" });
    expect(s.stats().byRoute["GET /health"]).toBeUndefined(); // not due yet
    now += 1500;
    await manager.tokensAndLogprobsCompletion({ prompt: "c" });
    await new Promise((r) => setTimeout(r, 50));
    expect(s.stats().byRoute["GET /health"]).toBe(1);
    expect(manager.stats().every((x) => x.healthy)).toBe(true);
  });

  it("updateWeight throttles in-flight requests per server", async () => {
    const s = await sim({ latencyMs: 40 });
    const manager = new ServerManager([server(s, { num_max_requests_at_once: 10 })]);
    manager.updateWeight(0.2);
    let peak = 0;
    const watcher = setInterval(() => {
      peak = Math.max(peak, s.stats().inFlight);
    }, 5);
    await Promise.all(
      Array.from({ length: 8 }, (_, i) => manager.tokensAndLogprobsCompletion({ prompt: `w${i}` })),
    );
    clearInterval(watcher);
    expect(peak).toBe(2);
  });

  it("eval requests use the eval pool", async () => {
    const s = await sim({ latencyMs: 40 });
    const manager = new ServerManager([server(s, { num_requests_for_eval: 1 })]);
    const pending = [0, 1, 2].map((i) => manager.completion({ prompt: `e${i}`, split: "eval" }));
    await new Promise((r) => setTimeout(r, 20));
    expect(manager.stats()[0]?.evalInUse).toBe(1);
    await Promise.all(pending);
    expect(manager.stats()[0]?.evalInUse).toBe(0);
  });
});

describe("ServerManager: a caller's signal", () => {
  it("aborts the running request and is not retried (the proxy's client went away)", async () => {
    let calls = 0;
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const manager = new ServerManager(
      [
        {
          base_url: "http://hang.test/v1",
          server_type: "sglang",
          model_name: "m",
          health_check: false,
        },
      ],
      {
        ...fastRetry,
        fetch: (_input, init) => {
          calls++;
          started();
          return new Promise<Response>((_, reject) =>
            init?.signal?.addEventListener("abort", () => reject(init.signal?.reason)),
          );
        },
      },
    );
    const caller = new AbortController();
    const managed = await manager.managedServer({
      signal: caller.signal,
      tokenizer: {
        name: "ids",
        eosTokenId: 0,
        bosTokenId: null,
        encode: (text) => [...text].map((ch) => ch.charCodeAt(0)),
        decode: (ids) => String.fromCharCode(...ids),
        applyChatTemplate: (messages) => messages.map((m) => String(m.content)).join("\n"),
      },
    });
    const answer = managed.completion({ prompt: "hi", max_tokens: 4 });
    await running;
    caller.abort(new DOMException("the client disconnected", "AbortError"));
    await expect(answer).rejects.toMatchObject({ name: "AbortError" });
    expect(calls).toBe(1);
    expect(manager.stats()[0]!.failures).toBe(0);
  });
});
