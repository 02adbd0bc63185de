import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { TrainerClient } from "../../../src/client/trainer-client";

let server: Server | null = null;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(null)));
  server = null;
});

/** A stand-in API whose stats step goes up by one per request. */
async function statsServer(): Promise<{ url: string; paths: string[] }> {
  const paths: string[] = [];
  server = createServer((req, res) => {
    paths.push(req.url ?? "");
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ run: "exp", step: paths.length }));
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths };
}

describe("TrainerClient.watchStats", () => {
  it("streams a snapshot per interval until the consumer stops", async () => {
    const { url, paths } = await statsServer();
    const trainer = new TrainerClient({ url, run: "exp" });
    const steps: number[] = [];
    for await (const stats of trainer.watchStats(5)) {
      steps.push(stats.step);
      if (steps.length === 3) break;
    }
    expect(steps).toEqual([1, 2, 3]);
    expect(paths).toEqual(Array(3).fill("/v1/runs/exp/stats"));
  });

  it("ends when its signal aborts, without waiting out the interval", async () => {
    const { url } = await statsServer();
    const trainer = new TrainerClient({ url, run: "exp" });
    const abort = new AbortController();
    const started = Date.now();
    let seen = 0;
    for await (const _ of trainer.watchStats(60_000, abort.signal)) {
      seen++;
      setTimeout(() => abort.abort(), 10);
    }
    expect(seen).toBe(1);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
