/**
 * Keeps concurrent sampling on one llama.cpp context from reading another sequence's logits.
 *
 * After a decode of several sequences, llama.cpp keeps its output rows in the order its
 * micro-batches ran and sorts them into batch order lazily, in place, on the first read of any
 * output (`output_reorder()` inside `llama_get_logits_ith` and its siblings). node-llama-cpp
 * samples each sequence of a batch in its own worker thread, so two sequences' first reads can
 * sort the rows at the same time: one step of one or two choices is then sampled from, and
 * reported with the logprob of, a half-sorted buffer. Measured on the engine e2e test's trained
 * tiny model (n = 8 on 4 sequences, alongside other requests): without the guard 4 of 720 choices
 * had one token 0.19 to 7.2 nats from PyTorch, every other token exact; with it, none of 1,920.
 *
 * The guard lets the first sampling after each decode run alone (it does the sort); the rest of
 * that batch's sampling runs concurrently, as before, on sorted rows.
 */

/** The two methods of node-llama-cpp's native context (`LlamaContext._ctx`) the guard wraps. */
export interface NativeContext {
  decodeBatch(...args: unknown[]): Promise<unknown>;
  sampleToken(...args: unknown[]): Promise<unknown>;
}

export function guardOutputReorder(native: NativeContext): void {
  const decode = native.decodeBatch.bind(native);
  const sample = native.sampleToken.bind(native);
  let sortPending = false;
  let sorted: Promise<unknown> = Promise.resolve();
  // Own properties: the native methods are inherited read-only, so plain assignment throws.
  Object.defineProperty(native, "decodeBatch", {
    configurable: true,
    value: async (...args: unknown[]) => {
      const result = await decode(...args);
      sortPending = true;
      return result;
    },
  });
  Object.defineProperty(native, "sampleToken", {
    configurable: true,
    value: (...args: unknown[]) => {
      if (sortPending) {
        // Cleared only once the native call is under way: one that throws before it starts has
        // sorted nothing, so the next sampling must still run alone.
        const first = sample(...args);
        sortPending = false;
        sorted = first.catch(() => undefined);
        return first;
      }
      return sorted.then(() => sample(...args));
    },
  });
}

/**
 * node-llama-cpp's native context of `context`, checked to have the methods the guard wraps; a
 * node-llama-cpp whose internals moved fails here, loudly, instead of sampling unguarded.
 */
export function nativeContextOf(context: object): NativeContext {
  const native = (context as { _ctx?: Partial<NativeContext> })._ctx;
  if (typeof native?.decodeBatch !== "function" || typeof native.sampleToken !== "function") {
    throw new Error(
      "node-llama-cpp's context has no _ctx.decodeBatch/_ctx.sampleToken: the engine's sampling " +
        "guard (src/engine/sampling-guard.ts) needs updating for this node-llama-cpp version",
    );
  }
  return native as NativeContext;
}
