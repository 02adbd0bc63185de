/**
 * Samples the API Worker isolate's V8 heap while a benchmark runs, through the local runtime's
 * inspector (`npm run dev -- --inspector-port N`, Chrome DevTools protocol `Runtime.getHeapUsage`).
 * The Workers limit is 128 MB per isolate; this is how the benchmarks check it.
 */
import WebSocket from "ws";

interface Target {
  title: string;
  webSocketDebuggerUrl: string;
}

export interface HeapPeak {
  /** Largest live V8 heap (after a full GC) seen since the last `takePeak()`, MiB. */
  max_used_mib: number;
  /** Largest heap reserved by V8 (used + free), MiB. */
  max_total_mib: number;
  /** Largest heap in use + ArrayBuffer backing stores (request bodies, payload bytes), MiB. */
  max_used_with_buffers_mib: number;
  samples: number;
}

export class IsolateHeapSampler {
  private ws: WebSocket | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private nextId = 0;
  private readonly pending = new Map<number, (result: unknown) => void>();
  private peak = { used: 0, total: 0, withBuffers: 0, samples: 0 };

  private sampling = false;

  /**
   * Connects to the isolate whose inspector title contains `worker` (the API Worker). Every
   * `intervalMs` it reads the heap in use; when that reading could be a new peak it asks V8 for a
   * full GC and reads again, so what is recorded is live memory (what the 128 MB limit is about),
   * not garbage V8 has not yet collected. Forcing a GC only then keeps the sampler from slowing the
   * workload it measures (a full GC every 200 ms cost the API thread noticeably).
   */
  static async start(
    inspectorPort: number,
    worker = "core:user:atropos-edge",
    intervalMs = 200,
  ): Promise<IsolateHeapSampler> {
    const targets = (await (
      await fetch(`http://127.0.0.1:${inspectorPort}/json`)
    ).json()) as Target[];
    const target = targets.find((t) => t.title.includes(worker));
    if (!target) throw new Error(`no inspector target for ${worker} on port ${inspectorPort}`);
    const sampler = new IsolateHeapSampler();
    const ws = new WebSocket(target.webSocketDebuggerUrl);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    ws.on("message", (raw) => {
      const message = JSON.parse(String(raw)) as { id?: number; result?: unknown };
      if (message.id === undefined) return;
      sampler.pending.get(message.id)?.(message.result);
      sampler.pending.delete(message.id);
    });
    sampler.ws = ws;
    sampler.timer = setInterval(() => void sampler.sample(), intervalMs);
    return sampler;
  }

  private async sample(): Promise<void> {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN || this.sampling) return;
    const call = (method: string) => {
      const id = ++this.nextId;
      return new Promise<unknown>((resolve) => {
        this.pending.set(id, resolve);
        ws.send(JSON.stringify({ id, method }));
      });
    };
    type Usage = { usedSize?: number; totalSize?: number; backingStorageSize?: number };
    this.sampling = true;
    try {
      const before = (await call("Runtime.getHeapUsage")) as Usage | undefined;
      if (!before?.usedSize) return;
      // Live memory is at most the heap in use: below the peak so far, no GC can find a new one.
      const newPeak =
        before.usedSize > this.peak.used ||
        before.usedSize + (before.backingStorageSize ?? 0) > this.peak.withBuffers;
      let usage = before;
      if (newPeak) {
        await call("HeapProfiler.collectGarbage");
        usage = ((await call("Runtime.getHeapUsage")) as Usage | undefined) ?? before;
      }
      const used = usage.usedSize ?? before.usedSize;
      this.peak.used = Math.max(this.peak.used, used);
      this.peak.total = Math.max(this.peak.total, before.totalSize ?? 0);
      this.peak.withBuffers = Math.max(
        this.peak.withBuffers,
        used + (usage.backingStorageSize ?? 0),
      );
    } finally {
      this.sampling = false;
    }
    this.peak.samples++;
  }

  /** The peak since the previous call, then starts a new window. */
  takePeak(): HeapPeak {
    const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
    const peak = {
      max_used_mib: mib(this.peak.used),
      max_total_mib: mib(this.peak.total),
      max_used_with_buffers_mib: mib(this.peak.withBuffers),
      samples: this.peak.samples,
    };
    this.peak = { used: 0, total: 0, withBuffers: 0, samples: 0 };
    return peak;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.ws?.close();
    this.ws = null;
  }
}
