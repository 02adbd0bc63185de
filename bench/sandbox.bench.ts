/**
 * `npm run bench:sandbox` — what a sandboxed code run costs, bounded (≈ 1–2 min on 2 cores).
 *
 * Python (PythonProcessPool, 2 warm children, each run a fresh no-network process):
 *   - start: the Pyodide memory snapshot plus filling the pool, once per process;
 *   - warm call: one `print(sum(range(1000)))` handed to a waiting child, answer back (the
 *     pool is given time to refill between calls), median and p95 of N;
 *   - back to back: N calls in a row, two at a time, so refilling the pool is the bound;
 *     reported as calls/s.
 * JavaScript (QuickJsThreadPool, 2 warm threads): warm call median/p95, and back to back.
 *
 * Prints a table and, last, one JSON line.
 */
import { cpus } from "node:os";
import { PythonProcessPool } from "../src/sandbox/node/python-pool";
import { QuickJsThreadPool } from "../src/sandbox/node/quickjs-pool";
import type { Sandbox, SandboxRunInput } from "../src/sandbox/types";

const N = Number(process.env.BENCH_SANDBOX_N ?? 20);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quantile = (xs: number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

async function timedRun(sandbox: Sandbox, input: SandboxRunInput): Promise<number> {
  const started = performance.now();
  const result = await sandbox.run(input);
  if (!result.ok) throw new Error(`bench run failed: ${JSON.stringify(result.error)}`);
  return performance.now() - started;
}

async function backToBack(sandbox: Sandbox, input: SandboxRunInput, calls: number, width = 2) {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next++ < calls) await timedRun(sandbox, input);
    }),
  );
  return calls / ((performance.now() - started) / 1000);
}

const python: SandboxRunInput = { language: "python", code: "print(sum(range(1000)))" };
const javascript: SandboxRunInput = {
  language: "javascript",
  code: "let s = 0; for (let i = 0; i < 1000; i++) s += i; return s;",
};

const pool = new PythonProcessPool({ size: 2 });
let started = performance.now();
await pool.start();
while (pool.warmCount < 2) await sleep(20);
const pythonStartMs = performance.now() - started;
const pythonWarm: number[] = [];
for (let i = 0; i < N; i++) {
  while (pool.warmCount < 2) await sleep(20);
  pythonWarm.push(await timedRun(pool, python));
}
const pythonRate = await backToBack(pool, python, N);
await pool.close();

const js = new QuickJsThreadPool({ size: 2 });
started = performance.now();
await timedRun(js, javascript);
const jsFirstMs = performance.now() - started;
const jsWarm: number[] = [];
for (let i = 0; i < N * 5; i++) {
  await sleep(60);
  jsWarm.push(await timedRun(js, javascript));
}
const jsRate = await backToBack(js, javascript, N * 5);
await js.close();

const rows = [
  ["python", `start ${Math.round(pythonStartMs)} ms`, pythonWarm, pythonRate],
  ["javascript", `first call ${Math.round(jsFirstMs)} ms`, jsWarm, jsRate],
] as const;
console.log(`sandbox bench: N=${N}, ${cpus().length} cores, Node ${process.version}`);
console.log("| engine | once | warm call p50 | warm call p95 | back to back |");
console.log("|---|---|---|---|---|");
for (const [engine, once, warm, rate] of rows) {
  console.log(
    `| ${engine} | ${once} | ${quantile(warm, 0.5).toFixed(0)} ms | ${quantile(warm, 0.95).toFixed(0)} ms | ${rate.toFixed(1)} calls/s |`,
  );
}
console.log(
  JSON.stringify({
    n: N,
    python: {
      start_ms: Math.round(pythonStartMs),
      warm_p50_ms: Math.round(quantile(pythonWarm, 0.5)),
      warm_p95_ms: Math.round(quantile(pythonWarm, 0.95)),
      back_to_back_per_s: Number(pythonRate.toFixed(2)),
    },
    javascript: {
      first_ms: Math.round(jsFirstMs),
      warm_p50_ms: Math.round(quantile(jsWarm, 0.5)),
      warm_p95_ms: Math.round(quantile(jsWarm, 0.95)),
      back_to_back_per_s: Number(jsRate.toFixed(2)),
    },
  }),
);
