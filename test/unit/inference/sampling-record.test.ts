/**
 * Inside a sampling record, a request made again gets its recorded answer, in order per request,
 * also while that answer is still on its way; outside one, or in another record's scope, every
 * request reaches the server.
 */
import { describe, expect, it } from "vitest";
import {
  recordingFetch,
  SamplingRecord,
  withSamplingRecord,
} from "../../../src/inference/sampling-record";

function countingServer() {
  let calls = 0;
  return {
    calls: () => calls,
    fetch: async (_input: string, init?: RequestInit) => {
      calls++;
      return Response.json({ n: calls, body: init?.body ?? null });
    },
  };
}

const post = (body: string) => ({ method: "POST", body });

describe("sampling record", () => {
  it("replays a run's answers to the same requests when the run is made again", async () => {
    const server = countingServer();
    const fetch = recordingFetch(server.fetch);
    const record = new SamplingRecord();
    const attempt = async () => {
      const [a, b] = await Promise.all([
        fetch("http://x/generate", post("p")),
        fetch("http://x/generate", post("p")),
      ]);
      const c = await fetch("http://x/generate", post("q"));
      return [await a.json(), await b.json(), await c.json()];
    };
    const first = await withSamplingRecord(record, attempt);
    expect(server.calls()).toBe(3);
    const again = await withSamplingRecord(record, attempt);
    expect(server.calls()).toBe(3);
    expect(again.map((r) => (r as { n: number }).n).sort()).toEqual(
      first.map((r) => (r as { n: number }).n).sort(),
    );
    // A request the first run did not make is sampled.
    await withSamplingRecord(record, () => fetch("http://x/generate", post("other")));
    expect(server.calls()).toBe(4);
  });

  it("records nothing outside a record, and never a failed answer", async () => {
    let calls = 0;
    const fetch = recordingFetch(async () => {
      calls++;
      return new Response("busy", { status: calls === 1 ? 503 : 200 });
    });
    await fetch("http://x/generate", post("p"));
    await fetch("http://x/generate", post("p"));
    expect(calls).toBe(2);
    const record = new SamplingRecord();
    const once = () => withSamplingRecord(record, () => fetch("http://x/generate", post("r")));
    calls = 0;
    expect((await once()).status).toBe(503);
    expect((await once()).status).toBe(200);
    expect((await once()).status).toBe(200);
    expect(calls).toBe(2);
  });

  it("a run made again while the first run's request is out waits for that answer", async () => {
    let calls = 0;
    const release: Array<() => void> = [];
    const fetch = recordingFetch(async () => {
      calls++;
      const n = calls;
      await new Promise<void>((resolve) => release.push(resolve));
      return Response.json({ n });
    });
    const record = new SamplingRecord();
    // The first run fails while its request is out (another part of it rejected).
    const first = withSamplingRecord(record, async () => {
      const out = fetch("http://x/generate", post("p"));
      await Promise.all([out, Promise.reject(new Error("tokenizer not loaded"))]);
    });
    await expect(first).rejects.toThrow("tokenizer not loaded");
    const again = withSamplingRecord(record, async () => {
      const a = await fetch("http://x/generate", post("p"));
      // The same request once more in this run is a new sample, not the first one again.
      const b = fetch("http://x/generate", post("p"));
      await Promise.resolve();
      release.shift()?.();
      return [await a.json(), await (await b).json()];
    });
    expect(calls).toBe(1);
    release.shift()!();
    expect(await again).toEqual([{ n: 1 }, { n: 2 }]);
    expect(calls).toBe(2);
  });

  it("a run made again samples anew when the first run's request failed on its way", async () => {
    let calls = 0;
    let fail: (error: Error) => void = () => {};
    let sent: () => void = () => {};
    const firstSent = new Promise<void>((resolve) => (sent = resolve));
    const fetch = recordingFetch(async () => {
      calls++;
      if (calls > 1) return Response.json({ n: calls });
      sent();
      return new Promise<Response>((_, reject) => (fail = reject));
    });
    const record = new SamplingRecord();
    const first = withSamplingRecord(record, () => fetch("http://x/generate", post("p")));
    await firstSent;
    const again = withSamplingRecord(record, () => fetch("http://x/generate", post("p")));
    // A turn of the event loop: the second run is waiting for the first run's answer.
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toBe(1);
    fail(new Error("connection reset"));
    await expect(first).rejects.toThrow("connection reset");
    expect(await (await again).json()).toEqual({ n: 2 });
    expect(calls).toBe(2);
  });

  it("stops waiting for the first run's answer when the request's own signal aborts", async () => {
    let calls = 0;
    let sent: () => void = () => {};
    const firstSent = new Promise<void>((resolve) => (sent = resolve));
    const fetch = recordingFetch(async () => {
      calls++;
      sent();
      return new Promise<Response>(() => {});
    });
    const record = new SamplingRecord();
    void withSamplingRecord(record, () => fetch("http://x/generate", post("p")));
    await firstSent;
    const controller = new AbortController();
    const again = withSamplingRecord(record, () =>
      fetch("http://x/generate", { ...post("p"), signal: controller.signal }),
    );
    controller.abort(new DOMException("timed out", "TimeoutError"));
    await expect(again).rejects.toThrow("timed out");
    expect(calls).toBe(1);
  });
});
