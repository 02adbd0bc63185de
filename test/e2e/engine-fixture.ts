/**
 * The engine tests' models: tiny random Qwen2/Qwen3/Llama checkpoints made with transformers
 * from a config (the 400-token test tokenizer; no download), written as GGUF by `engine convert`'s
 * writer (all in one Python process: test/e2e/python/engine_reference.py), cached under node_modules/.cache/engine-tiny-<hash of the scripts> and made once.
 * `score` is the independent reference: a PyTorch float32 forward pass of the same weights.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
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
    [
      join(ROOT, "examples", "python", "install_venv.sh"),
      "engine",
      "gguf, transformers, torch, fastapi",
    ],
    { timeout: 600_000 },
  ).then((r) => r.stdout.trim());
  return python;
}

/** `tinyModel("qwen2")` after `steps` of Adam on fixed sequences: far from uniform. */
export async function trainedTinyModel(steps = 60): Promise<TinyModel> {
  const base = await tinyModel("qwen2");
  const model = {
    hfDir: `${base.hfDir}-trained${steps}`,
    gguf: base.gguf.replace(/\.gguf$/, `-trained${steps}.gguf`),
  };
  if (existsSync(model.gguf)) return model;
  const tmp = `${model.hfDir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  await reference({ op: "train", model: base.hfDir, out: tmp, steps });
  await reference({ op: "convert", model: tmp, out: `${tmp}.gguf` });
  rmSync(model.hfDir, { recursive: true, force: true });
  renameSync(tmp, model.hfDir);
  renameSync(`${tmp}.gguf`, model.gguf);
  return model;
}

export async function tinyModel(arch: "qwen2" | "qwen3" | "llama", seed = 0): Promise<TinyModel> {
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
  await reference({ op: "make", out: tmp, tokenizer: TINY_TOKENIZER, arch, seed });
  await reference({ op: "convert", model: tmp, out: `${tmp}.gguf` });
  rmSync(model.hfDir, { recursive: true, force: true });
  renameSync(tmp, model.hfDir);
  renameSync(`${tmp}.gguf`, model.gguf);
  return model;
}

let scorer: { child: ChildProcess; lines: AsyncIterator<string> } | null = null;
let queue: Promise<unknown> = Promise.resolve();

/** One request to the reference process (engine_reference.py serve), one at a time. */
function reference<T>(request: Record<string, unknown>): Promise<T> {
  const answer = queue.then(async () => {
    if (!scorer) {
      const child = spawn(await enginePython(), [REFERENCE, "serve"], {
        stdio: ["pipe", "pipe", "inherit"],
      });
      scorer = { child, lines: createInterface({ input: child.stdout! })[Symbol.asyncIterator]() };
    }
    scorer.child.stdin!.write(`${JSON.stringify(request)}\n`);
    const line = await scorer.lines.next();
    if (line.done) throw new Error(`the PyTorch reference exited during ${String(request.op)}`);
    return JSON.parse(line.value) as T;
  });
  queue = answer.catch(() => undefined);
  return answer;
}

/** log p(token_i | tokens_<i) for i ≥ 1 of each sequence, by PyTorch in float32. */
export function score(model: TinyModel, sequences: number[][]): Promise<number[][]> {
  return reference({ op: "score", model: model.hfDir, sequences });
}

/** Ends the scorer process (afterAll). */
export function stopScorer(): void {
  scorer?.child.stdin?.end();
  scorer = null;
}

export interface Sequence {
  tokens: number[];
  masks: number[];
  logprobs: number[];
}

/** The largest |engine − PyTorch| over the trainable positions (see logprobErrors). */
export async function maxLogprobError(model: TinyModel, sequences: Sequence[]): Promise<number> {
  return Math.max(...(await logprobErrors(model, sequences)));
}

/**
 * Checks prompt positions (mask −100, logprob 1.0) and returns |engine − PyTorch| at every
 * trainable position of all sequences.
 */
export async function logprobErrors(model: TinyModel, sequences: Sequence[]): Promise<number[]> {
  const reference = await score(
    model,
    sequences.map((s) => s.tokens),
  );
  const errors: number[] = [];
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
      errors.push(Math.abs((s.logprobs[t] as number) - (reference[i]?.[t - 1] as number)));
    });
  });
  if (errors.length === 0) throw new Error("no trainable positions to compare");
  return errors;
}
