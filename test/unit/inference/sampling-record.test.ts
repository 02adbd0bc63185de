/**
 * Inside a sampling record, a request made again gets its recorded answer, in order per request;
 * outside one, or in another record's scope, every request reaches the server.
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
});
