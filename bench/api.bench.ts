/**
 * `npm run bench:api [-- --quick] [--runs N] [--atropos DIR --python BIN] [--json out.json]`
 *   `[--workloads 1,2] [--depths 2000,20000 | --depth-only | --no-depths] [--heap]`
 *   `[--trainer-encoding gzip|identity]`
 *
 * Load generator for the rollout API under a real `npm run dev` (fresh state, loopback only, an
 * API token required on every request): C concurrent producers POST /scored_data (gzip as the
 * Python env does) while a trainer pulls batches with GET /batch; every sequence carries a unique
 * id and must arrive exactly once. With `--atropos DIR` (a directory holding the original
 * `atroposlib` package; its API server needs fastapi and uvicorn in `--python`'s environment)
 * every workload also runs against the original server, alternating with this one, so the ratios
 * come from the same run on the same machine. Then measures leases as the queue grows to 20,000
 * mixed-size groups of 32-token sequences. With `--heap`, the API isolate's V8 heap is sampled over
 * the inspector throughout (the Workers limit is 128 MB per isolate). The bare runtime's floor
 * (floor.ts) is measured first. Bounded: every loop has a count and the whole run a deadline.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { startDevProcess } from "../src/cli/dev-process";
import { measureFloor } from "./floor";
import { IsolateHeapSampler } from "./isolate-heap";

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const quick = args.includes("--quick");
const jsonOut = option("--json");
// Where the dev server keeps its local D1/R2/DO state (default: a fresh dir under the OS tmpdir,
// on disk like `npm run dev`'s .wrangler/state). /dev/shm separates API cost from disk syncs.
const stateRoot = option("--state-root") ?? tmpdir();
const runs = Number(option("--runs") ?? (quick ? 1 : 3));
const atroposDir = option("--atropos");
const python = option("--python") ?? "python3";
const depthsArg = option("--depths");
const skipWorkloads = args.includes("--depth-only");
// `--workloads 1,3`: run only these workloads (1-based, as listed); `--no-depths`: no lease scan.
const onlyWorkloads = option("--workloads")?.split(",").map(Number);
// `--heap`: sample the API isolate's heap (its forced GCs run on the API's own thread, so the
// timed comparisons run without it and memory is measured in a run of its own).
const sampleHeap = args.includes("--heap");
// The trainer's Accept-Encoding (default gzip, as Atropos' trainer sends through requests).
const trainerEncoding = option("--trainer-encoding") ?? "gzip";
const DEADLINE = Date.now() + 40 * 60_000;
const TOKEN = "bench-token";
const AUTH = { authorization: `Bearer ${TOKEN}` };

interface Workload {
  name: string;
  tokens: number;
  logprobs: boolean;
  gzip: boolean;
  producers: number;
  groups: number;
}

const GROUP_SIZE = 16;
const LEASES_PER_DEPTH = 100;
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
/** A server under test: this project's `npm run dev` or the original Atropos API server. */
interface Target {
  kind: "edge" | "atropos";
  url: string;
  headers: Record<string, string>;
  heap: IsolateHeapSampler | null;
  stop(): Promise<void>;
}

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

function median(values: number[]): number {
  return percentile(values, 50);
}

/** Network-level failures retried (a server may answer early and close); reported per run. */
let postRetries = 0;

/**
 * POSTs as an env client does: a failed connection is retried (the body's hash makes a retry of
 * a stored group a duplicate, so exactly-once still holds); an HTTP error fails the run.
 */
async function post(
  url: string,
  body: Uint8Array<ArrayBuffer> | string,
  headers: Record<string, string> = {},
) {
  for (let attempt = 0; ; attempt++) {
    let res: Response;
    try {
      res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body,
      });
    } catch (error) {
      if (attempt >= 3) throw error;
      postRetries++;
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
      continue;
    }
    const text = await res.text();
    if (!res.ok) throw new Error(`${url} → ${res.status}: ${text.slice(0, 300)}`);
    return text;
  }
}

async function registerTrainer(t: Target, maxTokenLen: number) {
  await post(
    `${t.url}/register`,
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
    t.headers,
  );
  // The original server accepts envs only once a trainer has pulled (the trainer "started").
  await (await fetch(`${t.url}/batch`, { headers: t.headers })).arrayBuffer();
}

/** The dev server plus a sampler of its API isolate's heap (128 MB is the Workers limit). */
async function startEdge(prefix: string): Promise<Target> {
  const port = 18900 + Math.floor(Math.random() * 900);
  const dev = await startDevProcess({
    port,
    persistTo: mkdtempSync(join(stateRoot, prefix)),
    inspectorPort: sampleHeap ? port + 1000 : undefined,
    vars: { API_TOKEN: TOKEN },
  });
  const heap = sampleHeap ? await IsolateHeapSampler.start(port + 1000) : null;
  return {
    kind: "edge",
    url: dev.url,
    headers: AUTH,
    heap,
    stop: async () => {
      heap?.stop();
      await dev.stop();
    },
  };
}

/** The original Atropos API server (uvicorn, one worker, as `run-api` starts it). */
async function startAtropos(dir: string): Promise<Target> {
  const port = 17900 + Math.floor(Math.random() * 900);
  const child: ChildProcess = spawn(
    python,
    ["-m", "uvicorn", "atroposlib.api:app", "--host", "127.0.0.1", "--port", String(port)],
    {
      env: { ...process.env, PYTHONPATH: dir },
      stdio: ["ignore", "ignore", "pipe"],
      detached: true,
    },
  );
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + String(d)).slice(-4000);
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    await exited;
  };
  for (let i = 0; i < 150; i++) {
    if (child.exitCode !== null) throw new Error(`the Atropos server exited: ${stderr}`);
    try {
      if ((await fetch(`${url}/`)).ok)
        return { kind: "atropos", url, headers: {}, heap: null, stop };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  await stop();
  throw new Error(`the Atropos server did not answer within 30 s: ${stderr}`);
}

function startTarget(kind: Target["kind"], prefix: string): Promise<Target> {
  return kind === "edge" ? startEdge(prefix) : startAtropos(atroposDir!);
}

async function runWorkload(w: Workload, kind: Target["kind"]) {
  const target = await startTarget(kind, "bench-api-");
  const { url, headers, heap } = target;
  try {
    await registerTrainer(target, w.tokens);
    const env = JSON.parse(
      await post(
        `${url}/register-env`,
        JSON.stringify({
          max_token_length: w.tokens,
          desired_name: "bench",
          weight: 1,
          group_size: GROUP_SIZE,
        }),
        headers,
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
    postRetries = 0;
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
        await post(
          `${url}/scored_data`,
          body,
          w.gzip ? { ...headers, "content-encoding": "gzip" } : headers,
        );
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
      const res = await fetch(`${url}/batch`, {
        headers: { ...headers, "accept-encoding": trainerEncoding },
      });
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
    const result = {
      server: kind,
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
      post_retries: postRetries,
      isolate_heap: heap?.takePeak() ?? null,
    };
    if (duplicates || missing) throw new Error(`exactly-once violated: ${JSON.stringify(result)}`);
    return result;
  } finally {
    await target.stop();
  }
}

/** Lease round trips as the queue grows (mixed group sizes 1..16, 32-token sequences). */
async function queueDepthScan(depths: number[]) {
  const target = await startEdge("bench-depth-");
  const { url: base, headers, heap } = target;
  const rows: {
    queued_groups: number;
    lease_p50_ms: number;
    lease_p90_ms: number;
    lease_p99_ms: number;
    lease_max_ms: number;
    formation_p50_ms: number | null;
    formation_p99_ms: number | null;
    isolate_heap_max_mib: number;
  }[] = [];
  try {
    await registerTrainer(target, 64);
    const sizes = [1, 2, 4, 8, 16, 3, 5, 6];
    let queued = 0;
    let serial = 0;
    for (const depth of depths) {
      while (queued < depth && Date.now() < DEADLINE) {
        const list = Array.from({ length: Math.min(100, depth - queued) }, () => {
          const n = sizes[serial % sizes.length]!;
          serial++;
          const seq = (s: number) =>
            Array.from({ length: 32 }, (_, i) => (i < 2 ? [serial, s][i]! : i * 7));
          return {
            tokens: Array.from({ length: n }, (_, s) => seq(s)),
            masks: Array.from({ length: n }, (_, s) => seq(s).map((t, i) => (i < 8 ? -100 : t))),
            scores: Array.from({ length: n }, (_, s) => s % 2),
          };
        });
        await post(`${base}/scored_data_list`, JSON.stringify(list), headers);
        queued += list.length;
      }
      const latencies: number[] = [];
      heap?.takePeak(); // the window covers the leases at this depth
      for (let i = 0; i < LEASES_PER_DEPTH; i++) {
        const t0 = performance.now();
        const res = await fetch(`${base}/v1/runs/default/batches/lease`, {
          method: "POST",
          headers,
        });
        const body = (await res.json()) as { batch: unknown[]; batch_id: string };
        latencies.push(performance.now() - t0);
        queued -= body.batch.length;
        await post(`${base}/v1/runs/default/batches/${body.batch_id}/ack`, "{}", headers);
      }
      const stats = (await (await fetch(`${base}/v1/runs/default/stats`, { headers })).json()) as {
        queue: { groups: number };
        batch_formation: { p50_ms: number | null; p99_ms: number | null };
      };
      queued = stats.queue.groups;
      rows.push({
        queued_groups: stats.queue.groups,
        lease_p50_ms: percentile(latencies, 50),
        lease_p90_ms: percentile(latencies, 90),
        lease_p99_ms: percentile(latencies, 99),
        lease_max_ms: Math.max(...latencies),
        formation_p50_ms: stats.batch_formation.p50_ms,
        formation_p99_ms: stats.batch_formation.p99_ms,
        isolate_heap_max_mib: heap?.takePeak().max_used_with_buffers_mib ?? Number.NaN,
      });
      // Formation samples accumulate across depths; report the fresh ones per step.
      await post(
        `${base}/v1/runs/default/policy`,
        JSON.stringify({ version: rows.length }),
        headers,
      );
    }
    return rows;
  } finally {
    await target.stop();
  }
}

type WorkloadResult = Awaited<ReturnType<typeof runWorkload>>;

/** Medians over the runs of one server's results for one workload. */
function summarise(results: WorkloadResult[]) {
  const of = (f: (r: WorkloadResult) => number) => median(results.map(f));
  return {
    ingest_groups_per_s: of((r) => r.ingest_groups_per_s),
    e2e_sequences_per_s: of((r) => r.e2e_sequences_per_s),
    post_p50_ms: of((r) => r.post_p50_ms),
    batch_p50_ms: of((r) => r.batch_p50_ms),
    heap_max_mib: Math.max(...results.map((r) => r.isolate_heap?.max_used_with_buffers_mib ?? 0)),
  };
}

/** The lease scan, printed. */
async function leaseScan(depths: number[]) {
  console.log(
    `\n▶ leases vs queue depth (${depths.join(", ")} mixed-size groups, 32-token sequences)`,
  );
  const scan = await queueDepthScan(depths);
  console.table(scan);
  return scan;
}

async function main() {
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}`;
  console.log(
    `bench:api — ${new Date().toISOString()} — ${machine}${quick ? " (quick)" : ""} — ${runs} run(s) — state in ${stateRoot}${atroposDir ? ` — original server from ${atroposDir}` : " — no original server (--atropos)"}`,
  );
  // The bare runtime's floor for a 512-token group's size, beside the API in the same run.
  const floor = await measureFloor(
    stateRoot,
    Buffer.byteLength(JSON.stringify(makeGroup(0, WORKLOADS[0]!, 0))),
  );
  console.log(
    `floor (bare Miniflare Worker, sequential, median): no-op ${floor.noop_ms.toFixed(2)} ms; POST of ${floor.body_bytes} B stored as one D1 row ${floor.post_d1_row_ms.toFixed(2)} ms, put in R2 ${floor.post_r2_put_ms.toFixed(2)} ms`,
  );
  const kinds: Target["kind"][] = atroposDir ? ["atropos", "edge"] : ["edge"];
  const results: WorkloadResult[] = [];
  const summary = [];
  const selected = WORKLOADS.filter((_, i) => !onlyWorkloads || onlyWorkloads.includes(i + 1));
  for (const w of skipWorkloads ? [] : selected) {
    console.log(`\n▶ ${w.name}: ${w.groups} groups of ${GROUP_SIZE}, batch ${BATCH_SIZE}`);
    const byKind = new Map<Target["kind"], WorkloadResult[]>();
    for (let run = 0; run < runs; run++) {
      for (const kind of kinds) {
        const r = await runWorkload(w, kind);
        results.push(r);
        byKind.set(kind, [...(byKind.get(kind) ?? []), r]);
        console.log(
          `  run ${run + 1} ${kind.padEnd(7)} ingest ${r.ingest_groups_per_s.toFixed(1)} groups/s, e2e ${r.e2e_sequences_per_s.toFixed(0)} seq/s, POST p50 ${r.post_p50_ms.toFixed(1)} ms (${r.post_retries} retried), /batch p50 ${r.batch_p50_ms.toFixed(1)} ms, ${r.delivered} delivered exactly once`,
        );
      }
    }
    const edge = summarise(byKind.get("edge")!);
    const original = byKind.has("atropos") ? summarise(byKind.get("atropos")!) : null;
    const row = {
      workload: w.name,
      edge,
      atropos: original,
      ingest_ratio: original ? edge.ingest_groups_per_s / original.ingest_groups_per_s : null,
      e2e_ratio: original ? edge.e2e_sequences_per_s / original.e2e_sequences_per_s : null,
    };
    summary.push(row);
    console.table({
      "ingest groups/s (median)": `${edge.ingest_groups_per_s.toFixed(1)}${original ? ` vs ${original.ingest_groups_per_s.toFixed(1)} → ${row.ingest_ratio!.toFixed(2)}×` : ""}`,
      "e2e sequences/s (median)": `${edge.e2e_sequences_per_s.toFixed(0)}${original ? ` vs ${original.e2e_sequences_per_s.toFixed(0)} → ${row.e2e_ratio!.toFixed(2)}×` : ""}`,
      "/batch p50 ms (median)": `${edge.batch_p50_ms.toFixed(1)}${original ? ` vs ${original.batch_p50_ms.toFixed(1)}` : ""}`,
      "POST p50 ms (median)": `${edge.post_p50_ms.toFixed(1)}${original ? ` vs ${original.post_p50_ms.toFixed(1)}` : ""}`,
      "API isolate heap max MiB (with buffers)": edge.heap_max_mib,
    });
  }
  const depths = depthsArg
    ? depthsArg.split(",").map(Number)
    : quick
      ? [500, 2000]
      : [1000, 5000, 20000];
  const scan = args.includes("--no-depths") ? [] : await leaseScan(depths);
  const report = {
    date: new Date().toISOString(),
    machine,
    quick,
    runs,
    state_root: stateRoot,
    floor,
    summary,
    results,
    queue_depth: scan,
  };
  if (jsonOut) writeFileSync(jsonOut, JSON.stringify(report, null, 2));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
