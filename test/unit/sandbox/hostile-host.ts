/**
 * A host for hostile.test.ts, run as its own process (`node --expose-gc --import tsx
 * hostile-host.ts <python|javascript>`) so that an engine that takes its host down shows as this
 * process's exit code, and so that its RSS is the engine's alone, not the test runner's. Prints
 * one JSON line last.
 *
 * - memory: two hogs at a time at `memory_mb` 64; reports the host's RSS before and its peak
 *   (VmHWM, reset first through /proc/self/clear_refs; sampled every 5 ms as well).
 * - cases: every hostile program of the engine in turn, then a probe run that must answer right;
 *   reports each run's error kind and what its check found.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { PythonProcessPool } from "../../../src/sandbox/node/python-pool";
import { QuickJsThreadPool } from "../../../src/sandbox/node/quickjs-pool";
import type { Sandbox, SandboxRunInput } from "../../../src/sandbox/types";
import {
  type HostileCase,
  javascriptCases,
  memoryHogs,
  probes,
  pythonCases,
} from "./hostile-programs";

type Engine = "python" | "javascript";
const engine = process.argv[2] as Engine;
const CONCURRENT = 2;
const MEMORY_MB = 64;
/** Rounds of hogs: QuickJS runs are cheap, a Python run is a process started. */
const ROUNDS = engine === "python" ? 1 : 2;

const pool =
  engine === "python"
    ? new PythonProcessPool({ size: CONCURRENT, onWarning: () => undefined })
    : new QuickJsThreadPool({ size: CONCURRENT });

/** Polls `done` every 20 ms, at most `limitMs`. */
async function until(done: () => boolean, limitMs: number): Promise<void> {
  for (let waited = 0; !done() && waited < limitMs; waited += 20) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function runCase(sandbox: Sandbox, hostile: HostileCase) {
  const pending = sandbox.run(hostile.input);
  if (hostile.signal && pool instanceof PythonProcessPool) {
    // Only the child that has the request: warm ones are no part of the case.
    await until(() => pool.runningPids.length > 0, 60_000);
    for (const pid of pool.runningPids) process.kill(pid, hostile.signal);
  }
  const result = await pending;
  return {
    name: hostile.name,
    kind: result.error?.kind ?? null,
    message: result.error?.message.slice(0, 300) ?? null,
    expected: hostile.kinds,
    problem: hostile.check?.(result) ?? null,
    wall_ms: result.wall_ms,
  };
}

function statusKb(field: "VmRSS" | "VmHWM"): number {
  const match = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync("/proc/self/status", "utf8"));
  return Number(match?.[1] ?? 0);
}

async function measureMemory(sandbox: Sandbox) {
  // Warm: the engine loaded, the pool full, then a collection, so the baseline is steady.
  await Promise.all([sandbox.run(probes[engine].input), sandbox.run(probes[engine].input)]);
  if (pool instanceof PythonProcessPool) await until(() => pool.warmCount === CONCURRENT, 60_000);
  (globalThis as { gc?: () => void }).gc?.();
  const baselineKb = statusKb("VmRSS");
  let sampledPeakKb = baselineKb;
  const sampler = setInterval(() => {
    sampledPeakKb = Math.max(sampledPeakKb, statusKb("VmRSS"));
  }, 5);
  let hwmReset = true;
  try {
    writeFileSync("/proc/self/clear_refs", "5");
  } catch {
    hwmReset = false;
  }
  const kinds: Array<string | null> = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const code of memoryHogs[engine]) {
      const input: SandboxRunInput = {
        language: engine,
        code,
        memory_mb: MEMORY_MB,
        timeout_ms: 4000,
        collect_files: true,
      };
      const results = await Promise.all(
        Array.from({ length: CONCURRENT }, () => sandbox.run(input)),
      );
      kinds.push(...results.map((r) => r.error?.kind ?? null));
    }
  }
  clearInterval(sampler);
  const peakKb = Math.max(sampledPeakKb, hwmReset ? statusKb("VmHWM") : 0);
  return {
    concurrent: CONCURRENT,
    memory_mb: MEMORY_MB,
    baseline_mb: Math.round(baselineKb / 1024),
    peak_mb: Math.round(peakKb / 1024),
    growth_mb: Math.round((peakKb - baselineKb) / 1024),
    hwm_reset: hwmReset,
    kinds,
  };
}

async function main(): Promise<void> {
  const memory = await measureMemory(pool);
  const cases = [];
  for (const hostile of engine === "python" ? pythonCases : javascriptCases) {
    cases.push(await runCase(pool, hostile));
  }
  const probe = await pool.run(probes[engine].input);
  await pool.close();
  const probeOk = probe.stdout === probes[engine].stdout;
  console.log(JSON.stringify({ memory, cases, probe: probeOk ? "ok" : probe }));
}

await main();
