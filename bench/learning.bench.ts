/**
 * `npm run bench:learning`: the whole local loop (`atropos-edge start`: dev server, simulator,
 * env, demo trainer) for 60 steps of gsm8k_lite with two simulator seeds and once with learning
 * rate 0; prints mean accuracy over steps 1–10 and 51–60 of each run (docs/BENCHMARKS.md).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LearningSummary } from "../src/cli/learning-summary";
import { runStart } from "../src/cli/start";

const env = process.env.BENCH_ENV ?? "gsm8k_lite";
const steps = Number(process.env.BENCH_STEPS ?? 60);
const runs = [
  { seed: 1, learningRate: 0.3 },
  { seed: 2, learningRate: 0.3 },
  { seed: 1, learningRate: 0 },
];
const dir = mkdtempSync(join(tmpdir(), "bench-learning-"));
const quiet = Object.assign(Object.create(process.stdout), {
  write: () => true,
}) as NodeJS.WriteStream;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
try {
  for (const [i, run] of runs.entries()) {
    const file = join(dir, `run-${i}.json`);
    const started = Date.now();
    const code = await runStart(
      {
        steps,
        port: 8930 + i,
        envs: env,
        batchSize: 32,
        maxTokenLen: 2048,
        leaseSeconds: 60,
        maxSeconds: 0,
        serverType: "vllm",
        model: "sim-policy",
        tokenizer: "qwen3",
        simLatencyMs: 0,
        simSeed: run.seed,
        learningRate: run.learningRate,
        summaryJson: file,
      },
      quiet,
    );
    const summary = JSON.parse(readFileSync(file, "utf8")) as LearningSummary;
    const curve = summary.envs[env]!.steps;
    const acc = (from: number, to: number) =>
      mean(
        curve
          .filter((s) => s.step >= from && s.step <= to && s.accuracy !== null)
          .map((s) => s.accuracy as number),
      );
    const dropped = curve.reduce((a, s) => a + s.dropped_groups, 0);
    console.log(
      `${env} seed ${run.seed} lr ${run.learningRate}: exit ${code}, accuracy steps 1–10 ${acc(1, 10).toFixed(2)}, steps ${steps - 9}–${steps} ${acc(steps - 9, steps).toFixed(2)}, dropped groups ${dropped}, staleness mean ${summary.staleness.mean?.toFixed(2)} max ${summary.staleness.max}, ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
