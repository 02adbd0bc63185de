/**
 * Durability under a real `npm run dev`: SIGKILL in the middle of ingest and of delivery loses
 * no acknowledged group and delivers none twice; a 16 × 32,768-token group with logprobs is
 * accepted and delivered intact.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import {
  type DevServer,
  freePort,
  makeGroup,
  postJson,
  REGISTRATION,
  startDevServer,
} from "./harness";

const started: DevServer[] = [];
afterEach(async () => {
  for (const s of started.splice(0)) await s.stop();
});

async function start(opts: { port: number; persistTo: string }) {
  const s = await startDevServer(opts);
  started.push(s);
  return s;
}

/** Kills wrangler, workerd and everything else in the process group, with no chance to clean up. */
function sigkill(server: DevServer): Promise<void> {
  return new Promise((resolve) => {
    server.child.once("exit", () => resolve());
    process.kill(-server.child.pid!, "SIGKILL");
  });
}

interface Leased {
  batch_id: string;
  lease_id: string;
  /** ms since the epoch (the server's clock: the same machine's). */
  lease_expires_at: number;
  batch: { tokens: number[][] }[];
}

async function leaseAll(url: string, onBatch: (b: Leased) => Promise<void>, max = 1000) {
  for (let i = 0; i < max; i++) {
    const res = await fetch(`${url}/v1/runs/default/batches/lease`, {
      method: "POST",
      body: JSON.stringify({ lease_seconds: 2 }),
    });
    if (res.status === 204) return;
    await onBatch((await res.json()) as Leased);
  }
}

describe("restarts", () => {
  it("SIGKILL mid-ingest and mid-delivery: every acknowledged group delivered exactly once", async () => {
    const persistTo = mkdtempSync(join(tmpdir(), "atropos-edge-kill-"));
    const port = await freePort();
    let server = await start({ port, persistTo });
    await postJson(`${server.url}/register`, { ...REGISTRATION, batch_size: 8 });
    const env = (await postJson(`${server.url}/register-env`, {
      max_token_length: 2048,
      desired_name: "kill",
      weight: 1,
      group_size: 4,
    }).then((r) => r.json())) as { env_id: number };

    // Ingest from 4 producers and kill the server while requests are in flight.
    const acknowledged = new Set<number>();
    let next = 1;
    let stop = false;
    const producer = async () => {
      while (!stop && next <= 400) {
        const seed = next++;
        try {
          const res = await fetch(`${server.url}/scored_data`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(makeGroup(seed, 4, env.env_id)),
          });
          if (res.status === 200) acknowledged.add(makeGroup(seed, 4, env.env_id).tokens[0]![0]!);
          await res.arrayBuffer();
        } catch {
          // the server died under this request: not acknowledged
        }
      }
    };
    const producers = Promise.all([producer(), producer(), producer(), producer()]);
    while (acknowledged.size < 40) await new Promise((r) => setTimeout(r, 20));
    await sigkill(server);
    stop = true;
    await producers;
    started.splice(started.indexOf(server), 1);

    server = await start({ port, persistTo });
    const delivered = new Map<number, string>();
    let acked = 0;
    /** Trains on a leased batch: every group must be new, then the batch is acked. */
    const consume = async (b: Leased) => {
      for (const g of b.batch) {
        const id = g.tokens[0]![0]!;
        expect(delivered.has(id), `group ${id} delivered twice`).toBe(false);
        delivered.set(id, b.batch_id);
      }
      await postJson(`${server.url}/v1/runs/default/batches/${b.batch_id}/ack`, {
        lease_id: b.lease_id,
      });
      acked++;
    };
    // Deliver half, then kill again with some leases outstanding.
    await leaseAll(server.url, consume, Math.floor(acknowledged.size / 4));
    const outstanding = await fetch(`${server.url}/v1/runs/default/batches/lease`, {
      method: "POST",
      body: JSON.stringify({ lease_seconds: 2 }),
    });
    const unacked = outstanding.status === 200 ? ((await outstanding.json()) as Leased) : null;
    await sigkill(server);
    started.splice(started.indexOf(server), 1);

    server = await start({ port, persistTo });
    // The unacked lease must have expired; the restart usually outlasts it, so wait only the rest.
    const left = unacked ? unacked.lease_expires_at + 50 - Date.now() : 0;
    if (left > 0) await new Promise((r) => setTimeout(r, left));
    await leaseAll(server.url, async (b) => {
      if (unacked && b.batch_id === unacked.batch_id) expect(b.batch).toEqual(unacked.batch);
      await consume(b);
    });
    // An odd number of stored groups leaves one short of a batch (2 groups of 4 = 8 sequences):
    // a filler group completes it, so every stored group must now come out.
    const queued = async () =>
      ((await fetch(`${server.url}/status`).then((r) => r.json())) as { queue_size: number })
        .queue_size;
    expect(await queued()).toBeLessThan(2);
    if ((await queued()) === 1) {
      const filler = await postJson(`${server.url}/scored_data`, makeGroup(9999, 4, env.env_id));
      expect(filler.status).toBe(200);
      await leaseAll(server.url, consume);
    }
    expect(await queued()).toBe(0);
    expect(acked).toBeGreaterThan(1);
    for (const id of acknowledged)
      expect(delivered.has(id), `acknowledged group ${id} lost`).toBe(true);
  });
});

describe("large payloads", () => {
  it("accepts and delivers a 16 × 32,768-token group with logprobs intact", async () => {
    const server = await start({
      port: await freePort(),
      persistTo: mkdtempSync(join(tmpdir(), "atropos-edge-big-")),
    });
    await postJson(`${server.url}/register`, {
      ...REGISTRATION,
      batch_size: 16,
      max_token_len: 32768,
    });
    const group = makeGroup(99, 16, null, 32768);
    const json = JSON.stringify(group);
    expect(json.length).toBeGreaterThan(5_000_000);
    const res = await fetch(`${server.url}/scored_data`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipSync(json),
    });
    expect(await res.json()).toEqual({ status: "received" });
    const lease = await fetch(`${server.url}/v1/runs/default/batches/lease`, {
      method: "POST",
      headers: { "accept-encoding": "gzip" },
    });
    expect(lease.status).toBe(200);
    const body = (await lease.json()) as { batch: (typeof group)[] };
    expect(body.batch).toHaveLength(1);
    const got = body.batch[0]!;
    // Compare with what went over the wire (JSON has no -0).
    const sent = JSON.parse(json) as typeof group;
    expect(got.tokens).toEqual(sent.tokens);
    expect(got.masks).toEqual(sent.masks);
    expect(got.inference_logprobs).toEqual(sent.inference_logprobs);
    expect(got.scores).toEqual(sent.scores);
  });
});
