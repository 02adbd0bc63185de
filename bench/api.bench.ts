/**
 * `npm run bench:api [-- --quick] [--json out.json]`
 *
 * Load generator for the rollout API under a real `npm run dev` (fresh state, loopback only):
 * C concurrent producers POST /scored_data (gzip as the Python env does) while a trainer pulls
 * batches with GET /batch; every sequence carries a unique id and must arrive exactly once.
 * Then measures batch formation as the queue grows to 20,000 mixed-size groups. Throughout, the API
 * isolate's V8 heap is sampled over the inspector (the Workers limit is 128 MB per isolate).
 * Bounded: every loop has a count and the whole run a deadline.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { startDevProcess } from "../src/cli/dev-process";
import { IsolateHeapSampler } from "./isolate-heap";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const jsonOut = args.includes("--json") ? args[args.indexOf("--json") + 1] : undefined;
// Where the dev server keeps its local D1/R2/DO state (default: a fresh dir under the OS tmpdir,
// on disk like `npm run dev`'s .wrangler/state). /dev/shm separates API cost from disk syncs.
const stateRoot = args.includes("--state-root")
  ? args[args.indexOf("--state-root") + 1]!
  : tmpdir();
const DEADLINE = Date.now() + 20 * 60_000;

interface Workload {
  name: string;
  tokens: number;
  logprobs: boolean;
  gzip: boolean;
  producers: number;
  groups: number;
}

const GROUP_SIZE = 16;
const BATCH_SIZE = 64;
const WORKLOADS: Workload[] = [
  {
    name: "512 tok, no logprobs, no gzip, 1 producer",
    tokens: 512,
    logprobs: false,
    gzip: false,
    producers: 1,
    groups: quick ? 100 : 400,
  },
  {
    name: "2,048 tok, logprobs, gzip, 8 producers",
    tokens: 2048,
    logprobs: true,
    gzip: true,
    producers: 8,
    groups: quick ? 48 : 240,
  },
  {
    name: "8,192 tok, logprobs, gzip, 8 producers",
    tokens: 8192,
    logprobs: true,
    gzip: true,
    producers: 8,
    groups: quick ? 16 : 64,
  },
];
// Atropos' FastAPI server on this machine kind (from the issue): ingest groups/s, e2e seq/s, /batch p50 ms.
const ATROPOS: Record<number, [number, number, number]> = {
  512: [138, 553, 119],
  2048: [49, 102, 560],
  8192: [14, 22, 2636],
};

function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** A group whose sequences start with a unique id token (seqId) so delivery can be checked. */
function makeGroup(groupIndex: number, w: Workload, envId: number) {
  const tokens: number[][] = [];
  const masks: number[][] = [];
  const logprobs: number[][] = [];
  const prompt = Math.floor(w.tokens / 4);
  for (let s = 0; s < GROUP_SIZE; s++) {
    const seqId = groupIndex * GROUP_SIZE + s;
    const seq = new Array<number>(w.tokens);
    seq[0] = seqId;
    for (let i = 1; i < w.tokens; i++) seq[i] = (seqId * 31 + i * 7) % 151_000;
    tokens.push(seq);
    masks.push(seq.map((t, i) => (i < prompt ? -100 : t)));
    if (w.logprobs)
      logprobs.push(seq.map((_, i) => (i < prompt ? 1.0 : -((i * 7919 + s) % 1000) / 997)));
  }
  const group: Record<string, unknown> = {
    tokens,
    masks,
    scores: tokens.map((_, s) => (s % 2 ? 1.0 : -1.0)),
    env_id: envId,
  };
  if (w.logprobs) group.inference_logprobs = logprobs;
  return group;
}

async function post(
  url: string,
  body: Uint8Array<ArrayBuffer> | string,
  headers: Record<string, string> = {},
) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${url} → ${res.status}: ${text.slice(0, 300)}`);
  return text;
}

async function registerTrainer(url: string, maxTokenLen: number) {
  await post(
    `${url}/register`,
    JSON.stringify({
      wandb_group: "b",
      wandb_project: "b",
      batch_size: BATCH_SIZE,
      max_token_len: maxTokenLen,
      checkpoint_dir: "c",
      save_checkpoint_interval: 0,
      starting_step: 0,
      num_steps: 1_000_000,
    }),
  );
}

/** The dev server plus a sampler of its API isolate's heap (128 MB is the Workers limit). */
async function startMeasuredDev(prefix: string) {
  const port = 18900 + Math.floor(Math.random() * 900);
  const dev = await startDevProcess({
    port,
    persistTo: mkdtempSync(join(stateRoot, prefix)),
    inspectorPort: port + 1000,
  });
  const heap = await IsolateHeapSampler.start(port + 1000);
  return {
    dev,
    heap,
    stop: async () => {
      heap.stop();
      await dev.stop();
    },
  };
}

async function runWorkload(w: Workload) {
  const { dev, heap, stop } = await startMeasuredDev("bench-api-");
  try {
    await registerTrainer(dev.url, w.tokens);
    const env = JSON.parse(
      await post(
        `${dev.url}/register-env`,
        JSON.stringify({
          max_token_length: w.tokens,
          desired_name: "bench",
          weight: 1,
          group_size: GROUP_SIZE,
        }),
      ),
    );
    // Generated (and compressed) before the clock starts, as a real env would already hold them.
    const bodies: Uint8Array<ArrayBuffer>[] = [];
    let wireBytes = 0;
    for (let g = 0; g < w.groups; g++) {
      const json = Buffer.from(JSON.stringify(makeGroup(g, w, env.env_id)));
      const body = w.gzip ? gzipSync(json, { level: 6 }) : json;
      bodies.push(new Uint8Array(body));
      wireBytes += body.byteLength;
    }
    const postLatencies: number[] = [];
    const batchLatencies: number[] = [];
    const seen = new Uint8Array(w.groups * GROUP_SIZE);
    let duplicates = 0;
    let delivered = 0;
    let next = 0;
    const started = performance.now();
    let ingestDone = 0;
    const producer = async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const t0 = performance.now();
        await post(`${dev.url}/scored_data`, body, w.gzip ? { "content-encoding": "gzip" } : {});
        postLatencies.push(performance.now() - t0);
      }
    };
    const producers = Promise.all(Array.from({ length: w.producers }, producer)).then(() => {
      ingestDone = performance.now();
    });
    const total = w.groups * GROUP_SIZE;
    let lastDelivery = started;
    while (delivered < total && Date.now() < DEADLINE) {
      const t0 = performance.now();
      const res = await fetch(`${dev.url}/batch`, { headers: { "accept-encoding": "gzip" } });
      const body = (await res.json()) as { batch: { tokens: number[][] }[] | null };
      if (!body.batch) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      batchLatencies.push(performance.now() - t0);
      for (const g of body.batch) {
        for (const seq of g.tokens) {
          const id = seq[0]!;
          if (seen[id]) duplicates++;
          seen[id] = 1;
          delivered++;
        }
      }
      lastDelivery = performance.now();
    }
    await producers;
    const missing = seen.reduce((m, v) => m + (v ? 0 : 1), 0);
    const ingestS = (ingestDone - started) / 1000;
    const e2eS = (lastDelivery - started) / 1000;
    const ref = ATROPOS[w.tokens]!;
    const result = {
      workload: w.name,
      groups: w.groups,
      ingest_groups_per_s: w.groups / ingestS,
      ingest_mb_per_s: wireBytes / 1e6 / ingestS,
      post_p50_ms: percentile(postLatencies, 50),
      post_p99_ms: percentile(postLatencies, 99),
      e2e_sequences_per_s: delivered / e2eS,
      batch_p50_ms: percentile(batchLatencies, 50),
      batch_p99_ms: percentile(batchLatencies, 99),
      delivered,
      duplicates,
      missing,
      vs_atropos_ingest: w.groups / ingestS / ref[0],
      vs_atropos_e2e: delivered / e2eS / ref[1],
      isolate_heap: heap.takePeak(),
    };
    if (duplicates || missing) throw new Error(`exactly-once violated: ${JSON.stringify(result)}`);
    return result;
  } finally {
    await stop();
  }
}

/** Time to form a batch as the queue grows (mixed group sizes 1..16, short sequences). */
async function queueDepthScan(depths: number[]) {
  const { dev, heap, stop } = await startMeasuredDev("bench-depth-");
  const rows: {
    queued_groups: number;
    lease_p50_ms: number;
    lease_p99_ms: number;
    formation_p50_ms: number | null;
    formation_p99_ms: number | null;
    isolate_heap_max_mib: number;
  }[] = [];
  try {
    await registerTrainer(dev.url, 64);
    const sizes = [1, 2, 4, 8, 16, 3, 5, 6];
    let queued = 0;
    let serial = 0;
    for (const depth of depths) {
      while (queued < depth && Date.now() < DEADLINE) {
        const list = Array.from({ length: Math.min(100, depth - queued) }, () => {
          const n = sizes[serial % sizes.length]!;
          serial++;
          return {
            tokens: Array.from({ length: n }, (_, s) => [serial, s, 1, 2, 3, 4, 5, 6]),
            masks: Array.from({ length: n }, (_, s) => [-100, -100, s, 2, 3, 4, 5, 6]),
            scores: Array.from({ length: n }, (_, s) => s % 2),
          };
        });
        await post(`${dev.url}/scored_data_list`, JSON.stringify(list));
        queued += list.length;
      }
      const latencies: number[] = [];
      heap.takePeak(); // the window covers the leases at this depth
      for (let i = 0; i < 15; i++) {
        const t0 = performance.now();
        const res = await fetch(`${dev.url}/v1/runs/default/batches/lease`, { method: "POST" });
        const body = (await res.json()) as { batch: unknown[]; batch_id: string };
        latencies.push(performance.now() - t0);
        queued -= body.batch.length;
        await post(`${dev.url}/v1/runs/default/batches/${body.batch_id}/ack`, "{}");
      }
      const stats = (await (await fetch(`${dev.url}/v1/runs/default/stats`)).json()) as {
        queue: { groups: number };
        batch_formation: { p50_ms: number | null; p99_ms: number | null };
      };
      queued = stats.queue.groups;
      rows.push({
        queued_groups: stats.queue.groups,
        lease_p50_ms: percentile(latencies, 50),
        lease_p99_ms: percentile(latencies, 99),
        formation_p50_ms: stats.batch_formation.p50_ms,
        formation_p99_ms: stats.batch_formation.p99_ms,
        isolate_heap_max_mib: heap.takePeak().max_used_with_buffers_mib,
      });
      // Formation samples accumulate across depths; report the fresh ones per step.
      await post(`${dev.url}/v1/runs/default/policy`, JSON.stringify({ version: rows.length }));
    }
    return rows;
  } finally {
    await stop();
  }
}

async function main() {
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}`;
  console.log(
    `bench:api — ${new Date().toISOString()} — ${machine}${quick ? " (quick)" : ""} — state in ${stateRoot}`,
  );
  const results = [];
  for (const w of WORKLOADS) {
    console.log(`\n▶ ${w.name}: ${w.groups} groups of ${GROUP_SIZE}, batch ${BATCH_SIZE}`);
    const r = await runWorkload(w);
    results.push(r);
    console.table({
      "ingest groups/s": r.ingest_groups_per_s.toFixed(1),
      "ingest MB/s (wire)": r.ingest_mb_per_s.toFixed(1),
      "POST p50/p99 ms": `${r.post_p50_ms.toFixed(1)} / ${r.post_p99_ms.toFixed(1)}`,
      "e2e sequences/s": r.e2e_sequences_per_s.toFixed(1),
      "/batch p50/p99 ms": `${r.batch_p50_ms.toFixed(1)} / ${r.batch_p99_ms.toFixed(1)}`,
      "× Atropos ingest / e2e": `${r.vs_atropos_ingest.toFixed(2)} / ${r.vs_atropos_e2e.toFixed(2)}`,
      "exactly once": `${r.delivered} delivered, ${r.duplicates} dup, ${r.missing} missing`,
      "API isolate heap max MiB": `${r.isolate_heap.max_used_mib} (+ buffers: ${r.isolate_heap.max_used_with_buffers_mib})`,
    });
  }
  const depths = quick ? [500, 2000] : [1000, 5000, 20000];
  console.log(`\n▶ batch formation vs queue depth (${depths.join(", ")} mixed-size groups)`);
  const scan = await queueDepthScan(depths);
  console.table(scan);
  const report = {
    date: new Date().toISOString(),
    machine,
    quick,
    state_root: stateRoot,
    results,
    queue_depth: scan,
  };
  if (jsonOut) writeFileSync(jsonOut, JSON.stringify(report, null, 2));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
