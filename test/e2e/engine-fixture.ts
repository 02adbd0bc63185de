/**
 * The engine tests' models: tiny random Qwen2/Llama checkpoints made with transformers from a
 * config (the 400-token test tokenizer; no download), written as GGUF by `engine convert`'s
 * writer, cached under node_modules/.cache/engine-tiny-<hash of the scripts> and made once.
 * `score` is the independent reference: a PyTorch float32 forward pass of the same weights.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { CONVERTER } from "../../src/engine/convert";
import { ROOT } from "./harness";

const run = promisify(execFile);
export const TINY_TOKENIZER = join(ROOT, "test", "fixtures", "tokenizers", "tiny");
const REFERENCE = join(ROOT, "test", "e2e", "python", "engine_reference.py");

export interface TinyModel {
  hfDir: string;
  gguf: string;
}

let python: Promise<string> | null = null;

/** The engine venv's python (examples/python/install_venv.sh; cached). */
export function enginePython(): Promise<string> {
  python ??= run(
    "bash",
    [join(ROOT, "examples", "python", "install_venv.sh"), "engine", "gguf, transformers, torch"],
    { timeout: 600_000 },
  ).then((r) => r.stdout.trim());
  return python;
}

export async function tinyModel(arch: "qwen2" | "qwen3" | "llama", seed = 0): Promise<TinyModel> {
  const py = await enginePython();
  const hash = createHash("sha256");
  for (const file of [REFERENCE, CONVERTER, join(TINY_TOKENIZER, "tokenizer.json")])
    hash.update(readFileSync(file));
  const dir = join(
    ROOT,
    "node_modules",
    ".cache",
    `engine-tiny-${hash.digest("hex").slice(0, 12)}`,
  );
  const name = `${arch}-${seed}`;
  const model = { hfDir: join(dir, name), gguf: join(dir, `${name}.gguf`) };
  if (existsSync(model.gguf)) return model;
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `${name}.tmp-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  await run(py, [REFERENCE, "make", tmp, TINY_TOKENIZER, arch, String(seed)], { timeout: 300_000 });
  await run(py, [CONVERTER, tmp, `${tmp}.gguf`], { timeout: 300_000 });
  rmSync(model.hfDir, { recursive: true, force: true });
  renameSync(tmp, model.hfDir);
  renameSync(`${tmp}.gguf`, model.gguf);
  return model;
}

/** log p(token_i | tokens_<i) for i ≥ 1 of each sequence, by PyTorch in float32. */
export async function score(model: TinyModel, sequences: number[][]): Promise<number[][]> {
  const py = await enginePython();
  const child = execFile(py, [REFERENCE, "score", model.hfDir], {
    timeout: 300_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const out = new Promise<string>((resolve, reject) => {
    let text = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(text) : reject(new Error(`score exited ${code}`)),
    );
  });
  child.stdin?.end(JSON.stringify(sequences));
  return JSON.parse(await out) as number[][];
}

export interface Sequence {
  tokens: number[];
  masks: number[];
  logprobs: number[];
}

/**
 * Checks prompt positions (mask −100, logprob 1.0) and returns the largest |engine − PyTorch|
 * over the trainable positions of all sequences.
 */
export async function maxLogprobError(model: TinyModel, sequences: Sequence[]): Promise<number> {
  const reference = await score(
    model,
    sequences.map((s) => s.tokens),
  );
  let max = 0;
  let trainable = 0;
  sequences.forEach((s, i) => {
    if (s.masks.length !== s.tokens.length || s.logprobs.length !== s.tokens.length)
      throw new Error(`sequence ${i}: tokens, masks and logprobs differ in length`);
    s.tokens.forEach((token, t) => {
      if (s.masks[t] === -100) {
        if (s.logprobs[t] !== 1)
          throw new Error(`sequence ${i}: prompt position ${t} has logprob ${s.logprobs[t]}`);
        return;
      }
      if (s.masks[t] !== token)
        throw new Error(`sequence ${i}: mask ${s.masks[t]} at ${t} is not the token ${token}`);
      if (t === 0) throw new Error(`sequence ${i}: the first token is trainable`);
      trainable++;
      max = Math.max(max, Math.abs((s.logprobs[t] as number) - (reference[i]?.[t - 1] as number)));
    });
  });
  if (trainable === 0) throw new Error("no trainable positions to compare");
  return max;
}
