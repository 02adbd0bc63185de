/**
 * `npm run bench:api:sequential -- [--floor] [--posts N] [--runs N] [--tokens N] [--trainer] [--drain] [--json FILE] [--cpu-profile DIR]`
 *
 * What one 512-token group (`--tokens N`: N tokens per sequence) costs this API, without the
 * noise of concurrency: one producer POSTs `--posts` bodies one after another (after 50 of
 * warm-up) and the server's CPU (all its processes, /proc) is divided by the POSTs. `--trainer`
 * pulls GET /batch meanwhile as bench:api's trainer does (gzip, parsed, 20 ms back-off on an
 * empty answer), so the CPU per POST includes delivery; `--drain` (without `--trainer`) then
 * pulls the queue empty alone and reports the CPU per pull (a batch of 64 sequences: 4 groups).
 * `--floor` measures the floor Worker (api/floor-worker.ts) instead: its one-write ingest, and
 * its one-statement delivery under `--trainer` or `--drain`. `--cpu-profile DIR` samples the API
 * isolate as bench:api's option does (its CPU numbers are then not comparable).
 *
 * To judge a change, run it alternately from two checkouts (a `git worktree` of the base beside
 * this one) and compare medians: the run-to-run spread on a shared 2-core VM is ±15 %.
 */
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { Client, median, percentile } from "./api/http";
import { startTarget } from "./api/targets";
import { GROUP_SIZE, makeGroup, registerTrainer } from "./api/workloads";

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const whole = (name: string, fallback: number) => {
  const value = Number(option(name) ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number ≥ 1`);
  return value;
};
const POSTS = whole("--posts", 400);
const RUNS = whole("--runs", 1);
const WARMUP = 50;
const TOKENS = whole("--tokens", 512);
const kind = args.includes("--floor") ? "floor" : "edge";
const withTrainer = args.includes("--trainer");
const drain = args.includes("--drain");
if (withTrainer && drain)
  throw new Error("--drain pulls what the POSTs queued: run it without --trainer");

const per = (total: number, n: number) => (n > 0 ? total / n : Number.NaN);

async function run() {
  const target = await startTarget(kind, {
    stateRoot: tmpdir(),
    token: "bench-token",
    sampleHeap: false,
    cpuProfileDir: option("--cpu-profile"),
  });
  const client = new Client(target.url, target.headers, 4);
  try {
    await registerTrainer(client, TOKENS);
    const env = JSON.parse(
      await client.post(
        "/register-env",
        JSON.stringify({
          max_token_length: TOKENS,
          desired_name: "bench",
          weight: 1,
          group_size: GROUP_SIZE,
        }),
      ),
    ) as { env_id: number };
    // Bytes, not strings: undici sends a string body chunked, which costs the server more.
    const bodies = Array.from({ length: POSTS + WARMUP }, (_, g) =>
      Buffer.from(JSON.stringify(makeGroup(g, { tokens: TOKENS, logprobs: false }, env.env_id))),
    );
    for (let i = 0; i < WARMUP; i++) await client.post("/scored_data", bodies[i]!);

    let posting = true;
    const pulled = { batches: 0, empty: 0 };
    const pull = async () => {
      const res = await client.get("/batch", { "accept-encoding": "gzip" });
      return (JSON.parse(res.text) as { batch: unknown[] | null }).batch !== null;
    };
    const trainer = (async () => {
      while (withTrainer && posting) {
        if (await pull()) pulled.batches++;
        else {
          pulled.empty++;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    })();
    const latencies: number[] = [];
    const cpuBefore = target.cpuMs();
    const started = performance.now();
    for (let i = WARMUP; i < WARMUP + POSTS; i++) {
      const t0 = performance.now();
      await client.post("/scored_data", bodies[i]!);
      latencies.push(performance.now() - t0);
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = target.cpuMs() - cpuBefore;
    posting = false;
    await trainer;
    const result: Record<string, number | string> = {
      server: kind,
      tokens: TOKENS,
      posts: POSTS,
      groups_per_s: POSTS / seconds,
      cpu_ms_per_post: cpu / POSTS,
      post_p50_ms: median(latencies),
      post_p99_ms: percentile(latencies, 99),
      ...(withTrainer ? { batches_pulled: pulled.batches, empty_pulls: pulled.empty } : {}),
    };
    if (drain) {
      const pullLatencies: number[] = [];
      const drainCpu = target.cpuMs();
      for (let pulls = 0; pulls < POSTS + WARMUP; pulls++) {
        const t0 = performance.now();
        if (!(await pull())) break;
        pullLatencies.push(performance.now() - t0);
      }
      result.drain_pulls = pullLatencies.length;
      result.cpu_ms_per_pull = per(target.cpuMs() - drainCpu, pullLatencies.length);
      result.pull_p50_ms = median(pullLatencies);
    }
    return result;
  } finally {
    await client.close();
    await target.stop();
  }
}

const results: Record<string, number | string>[] = [];
for (let i = 0; i < RUNS; i++) {
  const result = await run();
  results.push(result);
  console.log(
    Object.entries(result)
      .map(([k, v]) => `${k} ${typeof v === "number" ? v.toFixed(2) : v}`)
      .join(", "),
  );
}
const out = option("--json");
if (out) writeFileSync(out, JSON.stringify(results, null, 2));
