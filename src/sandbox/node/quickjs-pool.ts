/**
 * JavaScript in QuickJS inside worker threads (see quickjs-thread.mjs), a few kept started so a
 * run does not wait for the engine to load. Each run gets a fresh QuickJS runtime in an engine
 * whose wasm memory is capped at `memory_mb` past the engine's base; a thread is reused after
 * runs that stayed small and replaced after one that grew its memory (so that memory is released
 * at once) or timed out. Terminating the thread is what guarantees the deadline (a wasm engine collecting
 * garbage is not interruptible from inside). The wasm is compiled once per pool and shared.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { SANDBOX_ANSWER_LIMITS } from "../../core/wire/sandbox-schemas";
import {
  failedRun,
  parseSandboxRequest,
  type Sandbox,
  type SandboxRunInput,
  type SandboxRunResult,
} from "../types";

const THREAD_SCRIPT = new URL("./quickjs-thread.mjs", import.meta.url);

interface ThreadAnswer {
  stdout: string;
  stderr: string;
  value?: string | null;
  error: { kind: "timeout" | "memory" | "runtime"; message: string } | null;
  files?: Record<string, string>;
  /** The run grew the thread's memory: end the thread rather than reuse it. */
  retire?: boolean;
}

export interface QuickJsPoolOptions {
  /** Threads kept started (default 2). */
  size?: number;
}

export class QuickJsThreadPool implements Sandbox {
  private readonly size: number;
  private readonly warm: Array<Promise<Worker>> = [];
  private closed = false;

  constructor(options: QuickJsPoolOptions = {}) {
    this.size = Math.max(1, options.size ?? 2);
  }

  async run(input: SandboxRunInput): Promise<SandboxRunResult> {
    const request = parseSandboxRequest(input);
    if (request.language !== "javascript") {
      return failedRun("unavailable", "this engine runs javascript only", 0);
    }
    if (this.closed) return failedRun("unavailable", "the sandbox is closed", 0);
    this.refill();
    const next = this.warm.shift()!;
    let worker: Worker;
    try {
      worker = await next;
    } catch (err) {
      return failedRun("unavailable", `the JavaScript engine did not start: ${String(err)}`, 0);
    }
    const started = performance.now();
    return new Promise<SandboxRunResult>((resolve) => {
      let settled = false;
      const finish = (result: SandboxRunResult, reusable = false) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        worker.off("message", onMessage);
        worker.off("error", onError);
        worker.off("exit", onExit);
        if (reusable && !this.closed && this.warm.length < this.size) {
          this.warm.unshift(Promise.resolve(worker));
        } else {
          void worker.terminate();
        }
        resolve(result);
      };
      const elapsed = () => performance.now() - started;
      const timer = setTimeout(
        () => finish(failedRun("timeout", `timed out after ${request.timeout_ms} ms`, elapsed())),
        request.timeout_ms,
      );
      const onMessage = (answer: ThreadAnswer) => {
        const wall = Math.round(elapsed());
        if (answer.error) {
          finish(failedRun(answer.error.kind, answer.error.message, wall, answer), !answer.retire);
          return;
        }
        finish(
          {
            ok: true,
            stdout: answer.stdout,
            stderr: answer.stderr,
            value: answer.value ?? null,
            error: null,
            wall_ms: wall,
            ...(answer.files ? { files: answer.files } : {}),
          },
          !answer.retire,
        );
      };
      const onError = (err: Error) =>
        finish(failedRun(classifyCrash(err), `the engine failed: ${err.message}`, elapsed()));
      const onExit = () =>
        finish(failedRun("runtime", "the engine exited without an answer", elapsed()));
      worker.on("message", onMessage);
      worker.on("error", onError);
      worker.on("exit", onExit);
      worker.postMessage({ ...request, limits: SANDBOX_ANSWER_LIMITS });
    }).finally(() => this.refill());
  }

  async close(): Promise<void> {
    this.closed = true;
    const pending = this.warm.splice(0);
    await Promise.all(
      pending.map((w) =>
        w.then(
          (worker) => worker.terminate(),
          () => undefined,
        ),
      ),
    );
  }

  private refill(): void {
    while (!this.closed && this.warm.length < this.size) {
      const ready = startThread();
      ready.catch(() => undefined);
      this.warm.push(ready);
    }
  }
}

let compiled: WebAssembly.Module | null = null;

/** The engine's wasm, compiled once for every thread (a Module is shared, not copied). */
function engineModule(): WebAssembly.Module {
  if (!compiled) {
    const require = createRequire(import.meta.url);
    compiled = new WebAssembly.Module(
      readFileSync(require.resolve("@jitl/quickjs-wasmfile-release-sync/wasm")),
    );
  }
  return compiled;
}

function startThread(): Promise<Worker> {
  // The thread's own JavaScript heap holds only capped strings; the engine lives in wasm memory.
  const worker = new Worker(THREAD_SCRIPT, {
    workerData: { wasmModule: engineModule() },
    resourceLimits: { maxOldGenerationSizeMb: 64 },
  });
  worker.unref();
  return new Promise((resolve, reject) => {
    worker.once("message", (message: { ready?: boolean }) => {
      if (message.ready) resolve(worker);
      else reject(new Error("unexpected first message from the engine thread"));
    });
    worker.once("error", reject);
  });
}

function classifyCrash(err: Error): "memory" | "runtime" {
  return /memory/i.test(err.message) ? "memory" : "runtime";
}
