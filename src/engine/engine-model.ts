/**
 * A GGUF model on llama.cpp (node-llama-cpp): n choices per request, each on one of `parallel`
 * context sequences (llama.cpp batches them together), exact token ids and the sampled tokens'
 * logprobs, and weight reloads that wait for running generations.
 *
 * Logprobs are llama.cpp's probability of the sampled token after its sampler chain
 * (temperature, top-k, top-p, min-p): the raw log-softmax at temperature 1 with no cuts (what
 * training uses), vLLM's `processed_logprobs` otherwise.
 */
import { randomInt } from "node:crypto";
import { availableParallelism } from "node:os";
import { basename } from "node:path";
import type { GeneratedChoice } from "../sim/generator";
import type { Sampling } from "../sim/protocols";
import { GgufTokenizer } from "./gguf-tokenizer";
import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel } from "./llama-api";
import { guardOutputReorder, nativeContextOf } from "./sampling-guard";

export interface EngineModelOptions {
  /** Context length per sequence (prompt + completion); default 4096 or the model's. */
  ctx?: number;
  /** Sequences generated at once (choices of all requests share them); default 4. */
  parallel?: number;
  /**
   * CPU threads per evaluation; default half the cores (at least 1). llama.cpp's threads
   * spin-wait: on a busy machine more threads than free cores is 100× slower, not faster.
   */
  threads?: number;
}

interface Loaded {
  path: string;
  model: LlamaModel;
  context: LlamaContext;
  tokenizer: GgufTokenizer;
  free: LlamaContextSequence[];
}

export class EngineModel {
  private current: Loaded;
  private readonly waiters: ((sequence: LlamaContextSequence) => void)[] = [];
  private running = 0;
  /** Set while a reload waits for running generations; new ones wait behind it. */
  private reloading: Promise<void> | null = null;
  private drained: (() => void) | null = null;
  version = 0;

  private constructor(
    private readonly llama: Llama,
    loaded: Loaded,
    private readonly options: EngineModelOptions,
  ) {
    this.current = loaded;
  }

  static async load(
    llama: Llama,
    path: string,
    options: EngineModelOptions = {},
  ): Promise<EngineModel> {
    return new EngineModel(llama, await loadFile(llama, path, options), options);
  }

  get tokenizer(): GgufTokenizer {
    return this.current.tokenizer;
  }

  get path(): string {
    return this.current.path;
  }

  get contextSize(): number {
    return this.current.context.contextSize;
  }

  get sizeBytes(): number {
    return this.current.model.size;
  }

  /** n choices for one prompt, generated concurrently (as many as there are free sequences). */
  async generate(promptText: string, sampling: Sampling): Promise<GeneratedChoice[]> {
    while (this.reloading) await this.reloading;
    this.running++;
    try {
      const loaded = this.current;
      const prompt = sampling.promptIds ?? loaded.tokenizer.encode(promptText);
      if (prompt.length === 0) throw new RangeError("the prompt has no tokens");
      if (prompt.length + sampling.maxTokens > loaded.context.contextSize) {
        throw new RangeError(
          `prompt (${prompt.length} tokens) + max_tokens (${sampling.maxTokens}) exceeds the ` +
            `engine's context of ${loaded.context.contextSize} tokens (engine --ctx)`,
        );
      }
      const base = sampling.seed ?? randomInt(2 ** 31);
      return await Promise.all(
        Array.from({ length: sampling.n }, (_, i) =>
          this.choice(loaded, prompt, sampling, (base + i) % 2 ** 32),
        ),
      );
    } finally {
      this.running--;
      if (this.running === 0) this.drained?.();
    }
  }

  private async choice(
    loaded: Loaded,
    prompt: number[],
    sampling: Sampling,
    seed: number,
  ): Promise<GeneratedChoice> {
    const sequence = await this.acquire(loaded);
    try {
      return await sample(loaded, sequence, prompt, sampling, seed);
    } finally {
      this.release(loaded, sequence);
    }
  }

  private acquire(loaded: Loaded): Promise<LlamaContextSequence> {
    const sequence = loaded.free.pop();
    if (sequence) return Promise.resolve(sequence);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private release(loaded: Loaded, sequence: LlamaContextSequence): void {
    const next = this.waiters.shift();
    if (next) next(sequence);
    else loaded.free.push(sequence);
  }

  /** Forgets every cached prompt (SGLang's /flush_cache). */
  async flushCache(): Promise<void> {
    await Promise.all(this.current.free.map((sequence) => sequence.clearHistory()));
  }

  /**
   * SGLang's update_weights_from_disk: new generations wait, running ones finish, then the new
   * file replaces the model. A file with another vocabulary is refused and nothing changes.
   */
  async reload(path: string, version?: number): Promise<number> {
    while (this.reloading) await this.reloading;
    let done!: () => void;
    this.reloading = new Promise((resolve) => {
      done = resolve;
    });
    try {
      if (this.running > 0) {
        await new Promise<void>((resolve) => {
          this.drained = resolve;
        });
        this.drained = null;
      }
      const next = await loadFile(this.llama, path, this.options);
      if (next.tokenizer.vocabSize !== this.current.tokenizer.vocabSize) {
        await next.context.dispose();
        await next.model.dispose();
        throw new RangeError(
          `${path} has a vocabulary of ${next.tokenizer.vocabSize} tokens, the served model ` +
            `${this.current.tokenizer.vocabSize}: weights must come from the same model`,
        );
      }
      const old = this.current;
      this.current = next;
      await old.context.dispose();
      await old.model.dispose();
      this.version = version ?? this.version + 1;
      return this.version;
    } finally {
      this.reloading = null;
      done();
    }
  }

  async close(): Promise<void> {
    await this.current.context.dispose();
    await this.current.model.dispose();
  }
}

async function loadFile(llama: Llama, path: string, options: EngineModelOptions): Promise<Loaded> {
  const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
  try {
    const parallel = options.parallel ?? 4;
    const context = await model.createContext({
      contextSize: options.ctx ?? Math.min(4096, model.trainContextSize || 4096),
      sequences: parallel,
      threads: options.threads ?? defaultThreads(),
      // An f32 file is served for exact logprobs: keep the attention cache f32 too (llama.cpp's
      // default f16 cache alone moves logprobs by ~1e-2 nats).
      ...(isF32(model)
        ? {
            experimentalKvCacheKeyType: "F32",
            experimentalKvCacheValueType: "F32",
            flashAttention: false,
          }
        : {}),
    });
    guardOutputReorder(nativeContextOf(context));
    const free = Array.from({ length: parallel }, () => context.getSequence());
    return { path, model, context, tokenizer: new GgufTokenizer(basename(path), model), free };
  } catch (error) {
    await model.dispose();
    throw error;
  }
}

/** GGUF general.file_type 0 = every tensor f32. */
function isF32(model: LlamaModel): boolean {
  return model.fileInfo.metadata.general?.file_type === 0;
}

export function defaultThreads(): number {
  return Math.max(1, Math.floor(availableParallelism() / 2));
}

/** The cached prefix of `sequence` that `prompt` can reuse, leaving ≥ 1 token to evaluate. */
async function reusePrefix(sequence: LlamaContextSequence, prompt: number[]): Promise<number[]> {
  const cached = sequence.contextTokens;
  let keep = 0;
  const limit = Math.min(cached.length, prompt.length - 1);
  while (keep < limit && cached[keep] === prompt[keep]) keep++;
  if (sequence.nextTokenIndex > keep) {
    await sequence.eraseContextTokenRanges([{ start: keep, end: sequence.nextTokenIndex }]);
  }
  return prompt.slice(keep);
}

async function sample(
  loaded: Loaded,
  sequence: LlamaContextSequence,
  prompt: number[],
  sampling: Sampling,
  seed: number,
): Promise<GeneratedChoice> {
  const tokens: number[] = [];
  const logprobs: number[] = [];
  if (sampling.maxTokens === 0)
    return { tokens, logprobs, finishReason: "length", responder: "llama.cpp" };
  const { tokenizer, model } = loaded;
  const stops = (sampling.stop ?? []).filter((s) => s.length > 0);
  let finishReason: "stop" | "length" = "length";
  let text: string | undefined;
  const generator = sequence.evaluateWithMetadata(
    await reusePrefix(sequence, prompt),
    { confidence: true },
    {
      // vLLM's and OpenAI's defaults: temperature 1, no top-k/top-p/min-p cut.
      temperature: sampling.temperature ?? 1,
      topK: sampling.topK ?? 0,
      topP: sampling.topP ?? 1,
      minP: sampling.minP ?? 0,
      seed,
      yieldEogToken: true,
    },
  );
  try {
    for await (const { token, confidence } of generator) {
      tokens.push(token);
      // Greedy sampling reports no distribution: the chosen token had probability 1 for it.
      logprobs.push(confidence > 0 ? Math.log(confidence) : -9999);
      if (model.isEogToken(token)) {
        finishReason = "stop";
        break;
      }
      if (stops.length > 0) {
        const decoded = tokenizer.decode(tokens, { skipSpecialTokens: true });
        const at = firstStop(decoded, stops);
        if (at >= 0) {
          finishReason = "stop";
          text = decoded.slice(0, at);
          break;
        }
      }
      if (tokens.length >= sampling.maxTokens) break;
    }
  } finally {
    await generator.return(undefined);
  }
  return { tokens, logprobs, finishReason, responder: "llama.cpp", text };
}

function firstStop(text: string, stops: string[]): number {
  let first = -1;
  for (const stop of stops) {
    const at = text.indexOf(stop);
    if (at >= 0 && (first < 0 || at < first)) first = at;
  }
  return first;
}
