import { afterEach, describe, expect, it, vi } from "vitest";
import { faultFor } from "../../../src/sim/faults";
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

const post = async (url: string, body: unknown) => {
  const response = await fetch(url, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json" },
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe("fault schedule", () => {
  it("is deterministic and hits exactly the configured share", () => {
    const count = (rate: number) =>
      Array.from({ length: 100 }, (_, k) => faultFor(k, { errorRate: rate })).filter(Boolean)
        .length;
    expect(count(0)).toBe(0);
    expect(count(0.25)).toBe(25);
    expect(count(1)).toBe(100);
    expect(faultFor(3, { timeoutRate: 0.5 })).toBe(faultFor(3, { timeoutRate: 0.5 }));
  });
});

describe("inference simulator", () => {
  it("says it is a test double and lists its model", async () => {
    const s = await sim({ model: "m1" });
    const health = (await (await fetch(`${s.url}/health`)).json()) as Record<string, unknown>;
    expect(health.test_double).toBe(true);
    expect(String(health.note)).toMatch(/TEST DOUBLE/);
    const models = (await (await fetch(`${s.url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data[0]?.id).toBe("m1");
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("is deterministic per (seed, prompt, choice, request seed)", async () => {
    const a = await sim({ seed: 1 });
    const b = await sim({ seed: 1 });
    const request = {
      prompt: { prompt_token_ids: [151644, 872, 198] },
      logprobs: 0,
      n: 4,
      seed: 5,
    };
    const first = await post(`${a.url}/generate`, request);
    const second = await post(`${b.url}/generate`, request);
    expect(first.body).toEqual(second.body);
    const other = await post(`${a.url}/generate`, { ...request, seed: 99 });
    expect(other.body.logprobs).not.toEqual(first.body.logprobs);
  });

  it("speaks /v1/completions with logprobs and token ids, truncating at max_tokens", async () => {
    const s = await sim();
    const { body } = await post(`${s.url}/v1/completions`, {
      prompt: "Hello",
      max_tokens: 2,
      logprobs: 1,
      return_tokens_as_token_ids: true,
    });
    const choice = (body.choices as Record<string, unknown>[])[0]!;
    expect(choice.finish_reason).toBe("length");
    const logprobs = choice.logprobs as {
      tokens: string[];
      token_logprobs: number[];
      top_logprobs: unknown[];
    };
    expect(logprobs.tokens).toHaveLength(2);
    expect(logprobs.tokens[0]).toMatch(/^token_id:\d+$/);
    expect(logprobs.top_logprobs).toHaveLength(2);
    expect((body.usage as { completion_tokens: number }).completion_tokens).toBe(2);
  });

  it("answers bad requests with 400 and unknown routes with 404", async () => {
    const s = await sim();
    expect((await post(`${s.url}/v1/chat/completions`, { messages: [] })).status).toBe(400);
    expect((await post(`${s.url}/v1/completions`, { prompt: 5 })).status).toBe(400);
    expect((await post(`${s.url}/nope`, {})).status).toBe(404);
  });

  it("injects 500s, truncated bodies and slow answers by rate, and counts them", async () => {
    const s = await sim({ faults: { errorRate: 0.5 } });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push((await post(`${s.url}/v1/completions`, { prompt: "x" })).status);
    expect(statuses).toEqual([200, 500, 200, 500]);
    expect(s.stats().faults.error).toBe(2);

    const t = await sim({ faults: { truncateRate: 1 } });
    const response = await fetch(`${t.url}/v1/completions`, {
      method: "POST",
      body: '{"prompt":"x"}',
    });
    await expect(response.text()).rejects.toThrow();

    const slow = await sim({ faults: { slowRate: 1, slowMs: 150 } });
    const started = Date.now();
    await post(`${slow.url}/v1/completions`, { prompt: "x" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it("holds timeout faults until the client aborts, and close() frees them", async () => {
    const s = await sim({ faults: { timeoutRate: 1 } });
    const error = await fetch(`${s.url}/v1/completions`, {
      method: "POST",
      body: '{"prompt":"x"}',
      signal: AbortSignal.timeout(200),
    }).catch((e: unknown) => e);
    expect((error as Error).name).toBe("TimeoutError");
    void fetch(`${s.url}/v1/completions`, { method: "POST", body: '{"prompt":"x"}' }).catch(
      () => undefined,
    );
    // Held once the simulator counted it (close() then finds it in flight).
    await vi.waitFor(() => expect(s.stats().faults.timeout).toBe(2), { interval: 2 });
    await s.close(); // must not hang on the held request
    expect(s.stats().faults.timeout).toBe(2);
  });

  it("serves the llama3 tokenizer with <|eot_id|> as EOS", async () => {
    const s = await sim({ tokenizer: "llama3" });
    const { body } = await post(`${s.url}/generate/`, { prompts: ["hi"], n: 1 });
    expect((body.completion_ids as number[][])[0]?.at(-1)).toBe(128009);
  });
});
