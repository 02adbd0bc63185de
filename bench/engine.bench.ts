/**
 * `npm run bench:engine -- --model FILE.gguf [--threads N] [--parallel N]` — what the llama.cpp
 * engine costs on this machine: load time, resident memory, and generation speed over HTTP
 * (`/v1/completions` with token ids, logprobs and return_token_ids, as the vllm backend asks):
 * one choice of 64 tokens, then n = parallel choices of 64 tokens at once, each twice.
 * Prints a table and, last, one JSON line.
 */
import { cpus, totalmem } from "node:os";
import { parseArgs } from "node:util";
import { startEngine } from "../src/engine/index";

const { values } = parseArgs({
  options: {
    model: { type: "string" },
    threads: { type: "string" },
    parallel: { type: "string", default: "4" },
    tokens: { type: "string", default: "64" },
    rounds: { type: "string", default: "2" },
  },
});
if (!values.model) throw new Error("--model FILE.gguf is required");
const parallel = Number(values.parallel);
const ROUNDS = Number(values.rounds);
const maxTokens = Number(values.tokens);
const rssBefore = process.memoryUsage().rss;
const loadStarted = performance.now();
const engine = await startEngine({
  model: values.model,
  parallel,
  threads: values.threads ? Number(values.threads) : undefined,
  ctx: 1024,
});
const loadSeconds = (performance.now() - loadStarted) / 1000;
const prompt = engine.model.tokenizer.encode(
  "Write a short story about a robot learning to paint.",
);

async function round(n: number): Promise<{ seconds: number; tokens: number }> {
  const started = performance.now();
  const response = await fetch(`${engine.url}/v1/completions`, {
    method: "POST",
    body: JSON.stringify({
      prompt,
      n,
      max_tokens: maxTokens,
      // EOS is rare enough at these lengths; ignore_eos is not part of the engine
      temperature: 1,
      logprobs: 0,
      return_token_ids: true,
      seed: n,
    }),
  });
  const body = (await response.json()) as { choices: { token_ids: number[] }[] };
  const tokens = body.choices.reduce((sum, c) => sum + c.token_ids.length, 0);
  return { seconds: (performance.now() - started) / 1000, tokens };
}

const rows: { name: string; tokensPerSecond: number; seconds: number }[] = [];
for (const n of [1, parallel]) {
  const runs = [];
  for (let i = 0; i < ROUNDS; i++) runs.push(await round(n));
  const tokens = runs.reduce((s, r) => s + r.tokens, 0);
  const seconds = runs.reduce((s, r) => s + r.seconds, 0);
  rows.push({
    name: `n=${n}, ${maxTokens} tokens`,
    tokensPerSecond: tokens / seconds,
    seconds: seconds / ROUNDS,
  });
}
const rssMb = (process.memoryUsage().rss - rssBefore) / 1e6;
const sizeMb = engine.model.sizeBytes / 1e6;
await engine.close();

const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB`;
console.log(`engine bench: ${values.model} (${sizeMb.toFixed(0)} MB) on ${machine}`);
console.log(`load ${loadSeconds.toFixed(1)} s · resident memory added ${rssMb.toFixed(0)} MB`);
for (const row of rows)
  console.log(
    `${row.name.padEnd(20)} ${row.tokensPerSecond.toFixed(1)} tokens/s (${row.seconds.toFixed(1)} s per request)`,
  );
console.log(JSON.stringify({ model: values.model, loadSeconds, rssMb, rows, machine }));
