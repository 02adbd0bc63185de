/**
 * The servers bench:api drives: this project's `npm run dev` ("edge"), the original Atropos API
 * server installed as it declares itself ("atropos": uvicorn[standard], checked in its own process
 * to run on uvloop and httptools) and the floor ("floor", floor-worker.ts: only the unavoidable
 * work, on the same Miniflare as the edge).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { Miniflare } from "miniflare";
import { freePort } from "../../scripts/ports.mjs";
import { PROJECT_ROOT, startDevProcess } from "../../src/cli/dev-process";
import { IsolateHeapSampler } from "../isolate-heap";
import { CpuProfiler } from "./cpu-profile";

export type Kind = "edge" | "atropos" | "floor";

export interface Target {
  kind: Kind;
  url: string;
  headers: Record<string, string>;
  heap: IsolateHeapSampler | null;
  /** The original's event loop and HTTP protocol, as its own process reported them. */
  runtime: string | null;
  /** Where the server keeps its local state (this API only: its D1 database is under it). */
  persistDir: string | null;
  /** CPU time (user + system) the server's processes have used so far, ms (Linux /proc). */
  cpuMs(): number;
  stop(): Promise<void>;
}

/** [pid, ppid, name, cpu ms] of every process (Linux /proc; clock ticks of 10 ms). */
function processes(): [number, number, string, number][] {
  const rows: [number, number, string, number][] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      rows.push([
        Number(entry),
        Number(fields[1]),
        name,
        (Number(fields[11]) + Number(fields[12])) * 10,
      ]);
    } catch {
      // exited meanwhile
    }
  }
  return rows;
}

/** CPU ms of `root` and its descendants (`root` itself left out with `childrenOnly`). */
function treeCpuMs(root: number, only?: (name: string) => boolean, childrenOnly = false): number {
  const rows = processes();
  const inTree = new Set([root]);
  let total = 0;
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of rows) {
      if (!inTree.has(pid) && inTree.has(ppid)) {
        inTree.add(pid);
        grew = true;
      }
    }
  }
  for (const [pid, , name, ms] of rows) {
    if (!inTree.has(pid) || (childrenOnly && pid === root)) continue;
    if (!only || only(name)) total += ms;
  }
  return total;
}

export interface TargetOptions {
  stateRoot: string;
  token: string;
  sampleHeap: boolean;
  /** Profile the API isolate's CPU of every edge run into this folder (cpu-profile.ts). */
  cpuProfileDir?: string;
  /** The original's checkout (holds `atroposlib/`) and the python that serves it. */
  atropos?: { dir: string; python: string };
}

let profiles = 0;

async function startEdge(o: TargetOptions): Promise<Target> {
  const p = await freePort();
  const inspect = o.sampleHeap || o.cpuProfileDir !== undefined;
  const inspector = inspect ? await freePort() : undefined;
  const persistDir = mkdtempSync(join(o.stateRoot, "bench-api-"));
  const dev = await startDevProcess({
    port: p,
    persistTo: persistDir,
    inspectorPort: inspector,
    vars: { API_TOKEN: o.token },
  });
  const heap = o.sampleHeap && inspector ? await IsolateHeapSampler.start(inspector) : null;
  const profiler = o.cpuProfileDir && inspector ? await CpuProfiler.start(inspector) : null;
  return {
    kind: "edge",
    url: dev.url,
    headers: { authorization: `Bearer ${o.token}` },
    heap,
    runtime: null,
    persistDir,
    cpuMs: () => treeCpuMs(dev.child.pid!),
    stop: async () => {
      heap?.stop();
      if (profiler) {
        const file = join(o.cpuProfileDir!, `edge-${++profiles}.cpuprofile`);
        console.log(`  CPU profile ${file}\n${await profiler.stop(file)}`);
      }
      await dev.stop();
    },
  };
}

/**
 * The python with the original's runtime (bench/requirements-atropos.txt: fastapi and
 * uvicorn[standard] from the configured package index, in a venv reused while the file is
 * unchanged) unless `--python` names one.
 */
export function atroposPython(given: string | undefined): string {
  if (given) return given;
  return execFileSync(
    join(PROJECT_ROOT, "examples/python/install_venv.sh"),
    ["atropos", "uvicorn, uvloop, httptools, fastapi"],
    {
      env: {
        ...process.env,
        INSTALL_VENV_REQUIREMENTS: join(PROJECT_ROOT, "bench/requirements-atropos.txt"),
      },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    },
  ).trim();
}

const UVLOOP = "uvloop.Loop";
const HTTPTOOLS = "uvicorn.protocols.http.httptools_impl.HttpToolsProtocol";

/**
 * The original server as `run-api` starts it (bench/atropos_server.py: uvicorn's defaults, one
 * worker), refused unless its own process reports uvloop's loop and httptools' protocol, both at
 * startup and for the connection that served the readiness check.
 */
async function startAtropos(o: TargetOptions): Promise<Target> {
  const { dir, python } = o.atropos!;
  const p = await freePort();
  const child: ChildProcess = spawn(
    python,
    [join(PROJECT_ROOT, "bench/atropos_server.py"), String(p)],
    { env: { ...process.env, PYTHONPATH: dir }, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + String(d)).slice(-4000);
  });
  const reports: Record<string, { loop?: string; http: string }> = {};
  let pending = "";
  // stdout also carries uvicorn's access log (its default, as run-api has it): always drained.
  child.stdout?.on("data", (d: Buffer) => {
    const lines = (pending + String(d)).split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) if (line.startsWith("{")) Object.assign(reports, JSON.parse(line));
  });
  const url = `http://127.0.0.1:${p}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    await exited;
  };
  for (let i = 0; i < 150; i++) {
    if (child.exitCode !== null) throw new Error(`the Atropos server exited: ${stderr}`);
    try {
      if ((await fetch(`${url}/`)).ok && reports.connection) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const { started, connection } = reports;
  if (started?.loop !== UVLOOP || started.http !== HTTPTOOLS || connection?.http !== HTTPTOOLS) {
    await stop();
    throw new Error(
      `the original server must run as uvicorn[standard] installs it (loop ${UVLOOP}, http ${HTTPTOOLS}); its process reported ${JSON.stringify(reports)}. ${stderr}`,
    );
  }
  const runtime = `loop ${started.loop}, http ${connection.http} (reported by pid ${child.pid})`;
  return {
    kind: "atropos",
    url,
    headers: {},
    heap: null,
    runtime,
    persistDir: null,
    cpuMs: () => treeCpuMs(child.pid!),
    stop,
  };
}

let floorBundle: string | null = null;

/** The floor Worker (floor-worker.ts), bundled once, on Miniflare with local D1 and R2. */
async function startFloor(o: TargetOptions): Promise<Target> {
  if (!floorBundle) {
    const out = await build({
      entryPoints: [join(PROJECT_ROOT, "bench/api/floor-worker.ts")],
      bundle: true,
      format: "esm",
      platform: "neutral",
      external: ["node:*", "cloudflare:*"],
      write: false,
      minify: false,
    });
    floorBundle = out.outputFiles[0]!.text;
  }
  const persist = mkdtempSync(join(o.stateRoot, "bench-floor-"));
  // Served on its own socket, as `npm run dev` serves the API (no entry worker in front).
  const mf = new Miniflare({
    workers: [
      {
        name: "floor",
        modules: true,
        script: floorBundle,
        compatibilityDate: "2026-05-01",
        compatibilityFlags: ["nodejs_compat"],
        d1Databases: ["DB"],
        r2Buckets: ["R2"],
        durableObjects: { FLOOR_DO: "FloorObject" },
        unsafeDirectSockets: [{ host: "127.0.0.1", port: await freePort() }],
      },
    ],
    host: "127.0.0.1",
    port: 0,
    logRequests: false,
    d1Persist: join(persist, "d1"),
    durableObjectsPersist: join(persist, "do"),
    r2Persist: join(persist, "r2"),
  });
  await mf.ready;
  const url = (await mf.unsafeGetDirectURL("floor")).origin;
  return {
    kind: "floor",
    persistDir: null,
    url,
    headers: {},
    heap: null,
    runtime: null,
    // Miniflare runs in this process: its workerd children are the floor's server.
    cpuMs: () => treeCpuMs(process.pid, (name) => name.includes("workerd"), true),
    stop: () => mf.dispose(),
  };
}

/**
 * Starts a server of `kind` on a free port (scripts/ports.mjs); a port that another process
 * bound between the check and the server's own bind is retried on another, at most twice.
 */
export async function startTarget(kind: Kind, o: TargetOptions): Promise<Target> {
  const start = kind === "edge" ? startEdge : kind === "atropos" ? startAtropos : startFloor;
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(o);
    } catch (err) {
      const taken = /address already in use|EADDRINUSE/i.test(String(err));
      if (!taken || attempt === 3) throw err;
      console.error(`  ${kind}: its port was taken, starting it on another`);
    }
  }
}
