/**
 * `npm run bench:real [-- --steps 40 --out DIR]`: a real model learns through the whole loop.
 * A tiny Qwen2-architecture model (random init from a config, the bundled 400-token tokenizer;
 * nothing downloaded) gets a short supervised warm start on sort_letters' training split, is
 * served by the llama.cpp engine, and is trained by examples/python/grpo_real_trainer.py through
 * `atropos-edge start` (API + env + engine + trainer), weights pushed back to the engine every
 * --push-every steps. Greedy accuracy on the env's 200 held-out items, by the env's own scoring,
 * before and after RL, for two seeds and a learning-rate-0 control; prints a table and writes
 * curves (JSON + CSV) and a summary under --out (docs/BENCHMARKS.md).
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs, promisify } from "node:util";
import { createEnv, openInference } from "../src/cli/inference";
import { runStart } from "../src/cli/start";
import { engineVenvPython } from "../src/engine/convert";
import { closeLlamaRuntime, startEngine } from "../src/engine/index";
import { getEnvDefinition } from "../src/envs/index";
import {
  SORT_ALPHABET,
  type SortLettersEnv,
  sortItem,
  sortPrompt,
  sortSplits,
} from "../src/envs/sort-letters";
import { getTokenizer } from "../src/inference/tokenizers/index";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "..");
const TOKENIZER = join(ROOT, "test", "fixtures", "tokenizers", "tiny");
const TRAINER = join(ROOT, "examples", "python", "grpo_real_trainer.py");
const CONVERTER = join(ROOT, "src", "engine", "python", "hf_to_gguf.py");

const { values } = parseArgs({
  options: {
    steps: { type: "string", default: "200" },
    "push-every": { type: "string", default: "2" },
    "batch-size": { type: "string", default: "64" },
    "group-size": { type: "string", default: "8" },
    lr: { type: "string", default: "1e-3" },
    "warm-steps": { type: "string", default: "1500" },
    "warm-lr": { type: "string", default: "3e-3" },
    // Stop the warm start at this greedy accuracy on training strings (--warm-steps caps it).
    "warm-until": { type: "string", default: "0.3" },
    hidden: { type: "string", default: "128" },
    seeds: { type: "string", default: "1,2" },
    out: { type: "string", default: join(ROOT, "bench", "results", "real") },
    port: { type: "string", default: "8950" },
  },
});
const steps = Number(values.steps);
const seeds = (values.seeds as string).split(",").map(Number);
const out = resolve(values.out as string);
mkdirSync(out, { recursive: true });
const ENV_CONFIG = { group_size: Number(values["group-size"]), length: 3, eval_size: 200 };
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

const python = await engineVenvPython(log);
const py = async (args: string[], timeout = 900_000) =>
  (await run(python, args, { timeout, maxBuffer: 64 * 1024 * 1024 })).stdout;

/** The env's training split as chat-rendered prompt → completion pairs (the warm start's data). */
async function warmStartData(): Promise<string> {
  const tokenizer = await getTokenizer(TOKENIZER);
  const { train } = sortSplits({ ...ENV_CONFIG, alphabet: SORT_ALPHABET });
  const file = join(out, "warmstart-train.jsonl");
  const lines = train.map((letters) => {
    const prompt = tokenizer.applyChatTemplate([{ role: "user", content: sortPrompt(letters) }], {
      addGenerationPrompt: true,
    });
    return JSON.stringify({ prompt, completion: `${sortItem(letters).answer}<|im_end|>` });
  });
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

/** Random init + warm start for `seed`, cached under node_modules/.cache by its inputs. */
interface WarmModel {
  dir: string;
  seconds: number;
  steps: number;
  trainAccuracy: number | null;
}

async function warmModel(seed: number, data: string): Promise<WarmModel> {
  const hash = createHash("sha256");
  for (const f of [TRAINER, data, join(TOKENIZER, "tokenizer.json")]) hash.update(readFileSync(f));
  hash.update(
    JSON.stringify([
      seed,
      values.hidden,
      values["warm-steps"],
      values["warm-lr"],
      values["warm-until"],
    ]),
  );
  const dir = join(ROOT, "node_modules", ".cache", `bench-real-${hash.digest("hex").slice(0, 12)}`);
  const meta = join(dir, "warmstart.json");
  if (existsSync(meta)) return JSON.parse(readFileSync(meta, "utf8")) as WarmModel;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  const started = performance.now();
  await py([
    TRAINER,
    "make",
    "--tokenizer",
    TOKENIZER,
    "--out",
    tmp,
    "--hidden",
    String(values.hidden),
    "--seed",
    String(seed),
  ]);
  const warmLog = await py([
    TRAINER,
    "warmstart",
    "--model",
    tmp,
    "--data",
    data,
    "--seed",
    String(seed),
    "--steps",
    String(values["warm-steps"]),
    "--lr",
    String(values["warm-lr"]),
    ...(Number(values["warm-until"]) > 0 ? ["--until-accuracy", String(values["warm-until"])] : []),
  ]);
  const seconds = (performance.now() - started) / 1000;
  // The last line: {"warmstart_steps", "accuracy" (on training strings), "warmstart_seconds"}.
  const done = JSON.parse(warmLog.trim().split("\n").at(-1) ?? "{}") as {
    warmstart_steps: number;
    accuracy: number | null;
  };
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  const warm = { dir, seconds, steps: done.warmstart_steps, trainAccuracy: done.accuracy };
  writeFileSync(meta, JSON.stringify(warm));
  return warm;
}

async function heldOutAccuracy(engineUrl: string): Promise<number> {
  const inference = await openInference({
    inferenceUrl: `${engineUrl}/v1`,
    serverType: "vllm",
    model: "tiny",
    tokenizer: TOKENIZER,
    simLatencyMs: 0,
    simSeed: 0,
  });
  try {
    const env = (await createEnv(
      getEnvDefinition("sort_letters"),
      ENV_CONFIG,
      inference,
      TOKENIZER,
    )) as SortLettersEnv;
    const result = await env.evaluateWithSamples();
    const value = Object.values(result.metrics)[0];
    if (value === undefined) throw new Error("sort_letters' evaluation returned no metric");
    return value;
  } finally {
    await inference.close();
  }
}

interface RunResult {
  seed: number;
  lr: number;
  pre: number;
  post: number;
  warmSeconds: number;
  rlSeconds: number;
  pushes: number;
  stalenessMean: number;
  curve: Record<string, unknown>[];
}

const { eval: heldOut } = sortSplits({ ...ENV_CONFIG, alphabet: SORT_ALPHABET });
const counts = new Map<string, number>();
for (const s of heldOut) counts.set(sortItem(s).answer, (counts.get(sortItem(s).answer) ?? 0) + 1);
const constant = Math.max(...counts.values()) / heldOut.length;

const data = await warmStartData();
const plan = [
  ...seeds.map((seed) => ({ seed, lr: Number(values.lr) })),
  { seed: seeds[0] as number, lr: 0 },
];
const results: RunResult[] = [];
const benchStarted = performance.now();
for (const [i, p] of plan.entries()) {
  log(`seed ${p.seed} lr ${p.lr}: warm start`);
  const warm = await warmModel(p.seed, data);
  log(`seed ${p.seed}: warm start ${warm.steps} steps, ${warm.trainAccuracy} on training strings`);
  const dir = join(out, `run-${i}-seed${p.seed}-lr${p.lr}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const model = join(dir, "model");
  cpSync(warm.dir, model, { recursive: true });
  await py([CONVERTER, model, join(dir, "start.gguf")]);
  const engine = await startEngine({
    model: join(dir, "start.gguf"),
    parallel: 8,
    threads: 1,
    ctx: 256,
  });
  try {
    const pre = await heldOutAccuracy(engine.url);
    log(`seed ${p.seed} lr ${p.lr}: pre-RL held-out accuracy ${pre.toFixed(3)}`);
    const metrics = join(dir, "trainer.jsonl");
    const trainer = [
      python,
      TRAINER,
      "train",
      "--model",
      model,
      "--engine",
      engine.url,
      "--steps",
      String(steps),
      "--push-every",
      String(values["push-every"]),
      "--batch-size",
      String(values["batch-size"]),
      "--lr",
      String(p.lr),
      "--seed",
      String(p.seed),
      "--metrics-out",
      metrics,
    ]
      .map((a) => JSON.stringify(a))
      .join(" ");
    const rlStarted = performance.now();
    const code = await runStart({
      steps,
      port: Number(values.port) + i,
      envs: "sort_letters",
      envConfigs: [{ ...ENV_CONFIG, seed: p.seed }],
      batchSize: Number(values["batch-size"]),
      maxTokenLen: 256,
      leaseSeconds: 120,
      maxSeconds: 1200,
      serverType: "vllm",
      inferenceUrl: `${engine.url}/v1`,
      model: "tiny",
      tokenizer: TOKENIZER,
      simLatencyMs: 0,
      simSeed: 0,
      persistTo: join(dir, "state"),
      trainerCommand: trainer,
      summaryJson: join(dir, "summary.json"),
    });
    const rlSeconds = (performance.now() - rlStarted) / 1000;
    if (code !== 0) throw new Error(`start exited with ${code} (seed ${p.seed} lr ${p.lr})`);
    const post = await heldOutAccuracy(engine.url);
    const curve = readFileSync(metrics, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const stale = curve.map((c) => Number(c.staleness_mean));
    results.push({
      ...p,
      pre,
      post,
      warmSeconds: warm.seconds,
      rlSeconds,
      pushes: curve.filter((c) => c.push_seconds !== null).length,
      stalenessMean: stale.reduce((a, b) => a + b, 0) / Math.max(1, stale.length),
      curve,
    });
    log(`seed ${p.seed} lr ${p.lr}: post-RL ${post.toFixed(3)} (${rlSeconds.toFixed(0)} s of RL)`);
  } finally {
    await engine.close();
  }
}
await closeLlamaRuntime();

const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, load ${loadavg()[0]?.toFixed(1)}`;
const trained = results.filter((r) => r.lr > 0);
const control = results.find((r) => r.lr === 0);
const pass =
  trained.every((r) => r.post - r.pre >= 0.1 && r.post - constant >= 0.1) &&
  control !== undefined &&
  Math.abs(control.post - control.pre) <= 0.03;
const rows = results.map(
  (r) =>
    `| ${r.seed} | ${r.lr} | ${r.pre.toFixed(3)} | ${r.post.toFixed(3)} | ${(r.post - r.pre).toFixed(3)} | ${r.pushes} | ${r.stalenessMean.toFixed(2)} | ${r.warmSeconds.toFixed(0)} | ${r.rlSeconds.toFixed(0)} |`,
);
const table = [
  `bench:real — sort_letters, ${steps} steps, ${machine}, total ${((performance.now() - benchStarted) / 1000).toFixed(0)} s`,
  `best constant answer: ${constant.toFixed(3)} of ${heldOut.length} held-out items`,
  "| seed | lr | pre-RL | post-RL | Δ | pushes | staleness | warm start s | RL s |",
  "|---|---|---|---|---|---|---|---|---|",
  ...rows,
  `target (post ≥ pre + 0.10 and ≥ constant + 0.10 per seed; lr 0 within 0.03): ${pass ? "met" : "NOT met"}`,
];
console.log(table.join("\n"));
const csv = [
  "seed,lr,step,reward_mean,accuracy,staleness_mean,staleness_max,weight_version,push_seconds,loss,clip_fraction,mean_ratio,seconds",
  ...results.flatMap((r) =>
    r.curve.map((c) =>
      [
        r.seed,
        r.lr,
        c.step,
        c.reward_mean,
        c.accuracy,
        c.staleness_mean,
        c.staleness_max,
        c.weight_version,
        c.push_seconds ?? "",
        c.loss,
        c.clip_fraction,
        c.mean_ratio,
        c.seconds,
      ].join(","),
    ),
  ),
];
writeFileSync(join(out, "curves.csv"), `${csv.join("\n")}\n`);
writeFileSync(
  join(out, "summary.json"),
  `${JSON.stringify({ date: new Date().toISOString(), machine, steps, constant, pass, runs: results }, null, 2)}\n`,
);
writeFileSync(join(out, "summary.md"), `${table.join("\n")}\n`);
console.log(
  `curves: ${join(out, "curves.csv")} · summary: ${join(out, "summary.json")} · dashboards: npm run dev -- --persist-to ${join(out, "run-0-*", "state")}`,
);
process.exit(pass ? 0 : 1);
