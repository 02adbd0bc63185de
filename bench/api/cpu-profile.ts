/**
 * CPU profiles of the API Worker's isolate while a bench:api workload runs (`--cpu-profile DIR`):
 * the V8 sampling profiler over the local runtime's inspector (Chrome DevTools protocol), saved as
 * .cpuprofile files (open in Chrome DevTools) and summarised as self time per function, so a
 * change is judged by where the CPU went. Profiling costs the isolate a little: timed comparisons
 * run without it.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import WebSocket from "ws";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const SAMPLING_US = 500;
/**
 * The most a sample counts for. The sampler is sometimes not scheduled for a long while (the
 * runtime's thread blocked, the VM busy elsewhere), and the sample after such a gap would carry
 * all of it: one such sample made a 10-line loop look like 15 % of the CPU.
 */
const MAX_SAMPLE_US = 4 * SAMPLING_US;

export class CpuProfiler {
  private nextId = 0;
  private readonly pending = new Map<number, (result: unknown) => void>();

  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (raw) => {
      const message = JSON.parse(String(raw)) as { id?: number; result?: unknown };
      if (message.id === undefined) return;
      this.pending.get(message.id)?.(message.result);
      this.pending.delete(message.id);
    });
  }

  private call(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = ++this.nextId;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Starts sampling the isolate whose inspector title contains `worker`, every 500 µs. */
  static async start(inspectorPort: number, worker = "core:user:atropos-edge") {
    const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as {
      title: string;
      webSocketDebuggerUrl: string;
    }[];
    // Exactly that worker when there is one ("d1:db" is also the start of "d1:db:<id>").
    const target =
      targets.find((t) => t.title.endsWith(` ${worker}`)) ??
      targets.find((t) => t.title.includes(worker));
    if (!target) throw new Error(`no inspector target for ${worker} on port ${inspectorPort}`);
    const ws = new WebSocket(target.webSocketDebuggerUrl);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    const profiler = new CpuProfiler(ws);
    await profiler.call("Profiler.enable");
    await profiler.call("Profiler.setSamplingInterval", { interval: SAMPLING_US });
    await profiler.call("Profiler.start");
    return profiler;
  }

  /** Stops, writes `file` and returns the summary. */
  async stop(file: string): Promise<string> {
    const { profile } = (await this.call("Profiler.stop")) as { profile: Profile };
    this.ws.close();
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(profile));
    return summarise(profile);
  }
}

/** Self time per function (name, file:line), the top `top`, as shares of the busy time. */
export function summarise(profile: Profile, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let gaps = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    const delta = profile.timeDeltas[i] ?? 0;
    gaps += Math.max(0, delta - MAX_SAMPLE_US);
    self.set(id, (self.get(id) ?? 0) + Math.min(delta, MAX_SAMPLE_US));
  }
  const byFunction = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === "(idle)" || functionName === "(program)") continue;
    const file = url.split("/").at(-1) ?? "";
    const key = `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    busy += us;
  }
  const wall = (profile.endTime - profile.startTime) / 1000;
  const rows = [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top);
  return [
    `busy ${(busy / 1000).toFixed(0)} ms of ${wall.toFixed(0)} ms sampled (${(gaps / 1000).toFixed(0)} ms of gaps between samples left out: each sample counts ≤ ${MAX_SAMPLE_US / 1000} ms)`,
    ...rows.map(
      ([k, us]) =>
        `${((100 * us) / busy).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`,
    ),
  ].join("\n");
}
