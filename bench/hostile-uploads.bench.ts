/**
 * `npx tsx bench/hostile-uploads.bench.ts [--entry FILE]` — the numbers issue #24 asks for, which
 * the hostile-uploads e2e test bounds but does not assert as ratios (timing ratios of ~10 ms
 * latencies on a shared machine would make a flaky test):
 * - p99 of 50 sequential submissions by one contributor to its run, without and then with 3
 *   stalled 1 MB uploads (sending nothing: the default 30 s idle limit keeps them open) and 1
 *   stalled 150 MB upload open, from a contributor of another run, a token over its quota and admin;
 * - the API isolate's heap (Chrome DevTools protocol over the inspector, after full GCs) while a
 *   427 KB gzip list of many small groups, a list at MAX_LIST_GROUPS and a 60 MB plain list of
 *   small groups are posted, with their status and time, and the worst latency another client
 *   sees meanwhile.
 * Loopback only; every loop is bounded; the whole run takes about a minute. NO_HEAP=1: no
 * inspector; DEV_LOGS=1: print the dev server's log tail at the end.
 *
 * Seen on the shared dev machine: right after the stalled sockets are dropped, the next pooled
 * keep-alive request can fail on the client with "other side closed" while the server log shows
 * it answered; such a request is retried once on a new connection and reported as retried.
 */
import { mkdtempSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { freePort } from "../scripts/ports.mjs";
import { startDevProcess } from "../src/cli/dev-process";
import { makeGroup, REGISTRATION } from "../test/e2e/harness";
import { IsolateHeapSampler } from "./isolate-heap";

const ADMIN = "bench-hostile-admin";
const args = process.argv.slice(2);
const entryAt = args.indexOf("--entry");
const port = await freePort();
const inspectorPort = await freePort();
const dev = await startDevProcess({
  port,
  persistTo: mkdtempSync(join(tmpdir(), "hostile-bench-")),
  inspectorPort: process.env.NO_HEAP ? undefined : inspectorPort,
  vars: { API_TOKEN: ADMIN },
  entry: entryAt >= 0 ? args[entryAt + 1] : undefined,
});
const heap = process.env.NO_HEAP
  ? {
      takePeak: () => ({ max_used_mib: Number.NaN, max_used_with_buffers_mib: Number.NaN }),
      stop() {},
    }
  : await IsolateHeapSampler.start(inspectorPort);

async function post(path: string, body: string | Uint8Array, token = ADMIN, gzip = false) {
  const started = performance.now();
  const res = await fetch(`${dev.url}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      ...(gzip ? { "content-encoding": "gzip" } : {}),
    },
    body: typeof body === "string" ? body : new Uint8Array(body),
    signal: AbortSignal.timeout(120_000),
  }).catch((error: unknown) => ({
    status: 0,
    text: async () => `${String(error)} (${String((error as { cause?: unknown }).cause)})`,
  }));
  const text = await res.text();
  return { status: res.status, ms: performance.now() - started, text };
}

async function token(body: Record<string, unknown>): Promise<string> {
  const res = await post("/v1/tokens", JSON.stringify({ name: "bench", ...body }));
  return (JSON.parse(res.text) as { secret: string }).secret;
}

function stall(path: string, secret: string, declared: number) {
  const socket = connect(port, "127.0.0.1");
  socket.on("error", () => {});
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n[`,
  );
  return socket;
}

async function latencies(n: number, seed: number, secret: string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await post(
      "/runs/beta/scored_data",
      JSON.stringify(makeGroup(seed + i, 2, 0)),
      secret,
    );
    out.push(res.status === 200 ? res.ms : Number.POSITIVE_INFINITY);
  }
  return out;
}
const p99 = (v: number[]) => [...v].sort((a, b) => a - b)[Math.ceil(v.length * 0.99) - 1]!;
const ms = (v: number) => `${v.toFixed(1)} ms`;

try {
  for (const run of ["alpha", "beta"]) {
    await post(`/runs/${run}/register`, JSON.stringify(REGISTRATION));
    await post(
      `/runs/${run}/register-env`,
      JSON.stringify({ max_token_length: 2048, desired_name: run, weight: 1, group_size: 2 }),
    );
  }
  const alpha = await token({ scopes: ["contributor"], run: "alpha" });
  const beta = await token({ scopes: ["contributor"], run: "beta" });
  const over = await token({ scopes: ["contributor"], run: "alpha", bytes_per_day: 1000 });

  await latencies(10, 1, beta); // warm-up
  const before = await latencies(50, 100, beta);
  const stalls = [
    stall("/runs/alpha/scored_data", alpha, 1_000_000),
    stall("/runs/alpha/scored_data", over, 1_000_000),
    stall("/runs/alpha/scored_data", ADMIN, 1_000_000),
    stall("/runs/alpha/scored_data", ADMIN, 150_000_000),
  ];
  await new Promise((resolve) => setTimeout(resolve, 300));
  const during = await latencies(50, 200, beta);
  for (const s of stalls) s.destroy();
  console.log(
    `submissions: p99 ${ms(p99(before))} without stalls, ${ms(p99(during))} with 4 stalled uploads (ratio ${(p99(during) / p99(before)).toFixed(2)}), max ${ms(Math.max(...during))}`,
  );

  const small = (n: number, seed: number) =>
    JSON.stringify(Array.from({ length: n }, (_, i) => makeGroup(seed + i, 2, 0)));
  const lists: [string, Uint8Array | string, boolean][] = [
    ["427 KB gzip list (6,200 small groups)", gzipSync(small(6200, 10_000)), true],
    ["gzip list at MAX_LIST_GROUPS (1024 groups)", gzipSync(small(1024, 40_000)), true],
    ["60 MB plain list of small groups", small(Math.round(60e6 / 620), 60_000), false],
  ];
  for (const [name, body, gzip] of lists) {
    heap.takePeak();
    let worst = 0;
    let other = 0;
    let done = false;
    let retried = false;
    const list = post("/runs/beta/scored_data_list", body, beta, gzip)
      .then(async (first) => {
        if (first.status !== 0) return first;
        retried = true;
        return post("/runs/beta/scored_data_list", body, beta, gzip);
      })
      .finally(() => {
        done = true;
      });
    // Another client submits meanwhile (bounded: 200 at most).
    while (!done && other < 200) {
      const res = await post(
        "/runs/alpha/scored_data",
        JSON.stringify(makeGroup(90_000 + other, 2, 0)),
        alpha,
      );
      worst = Math.max(worst, res.status === 200 ? res.ms : Number.POSITIVE_INFINITY);
      other++;
    }
    const res = await list;
    await new Promise((resolve) => setTimeout(resolve, 500)); // one more heap sample
    const peak = heap.takePeak();
    console.log(
      `${name}: ${body.length} bytes → ${res.status}${retried ? " (retried once after a connection error)" : ""} in ${ms(res.ms)}; API isolate heap max ${peak.max_used_mib} MiB (with buffers ${peak.max_used_with_buffers_mib} MiB); another client's worst latency ${ms(worst)} over ${other} submissions; ${res.text.slice(0, 120)}`,
    );
  }
} finally {
  if (process.env.DEV_LOGS) console.log(dev.logs().slice(-4000));
  heap.stop();
  await dev.stop();
}
