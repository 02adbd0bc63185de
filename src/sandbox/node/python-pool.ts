/**
 * Python in throwaway child processes: each child loads Pyodide (from a memory snapshot when one
 * could be made), waits warm, runs exactly one request and dies. Isolation comes from the OS and
 * the process, not from Pyodide: the child starts in a new network namespace (`unshare -n`, `-rn` without root; no
 * interfaces but a down loopback), under Node's permission model (it may read only the Pyodide
 * package; no writes, child processes or workers; no signals to other processes), with an empty
 * environment; its wasm memory is capped and its RSS polled; a wall-clock timer kills it.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { errorMessage } from "../../core/errors";
import { SANDBOX_ANSWER_LIMITS } from "../../core/wire/sandbox-schemas";
import {
  failedRun,
  parseSandboxRequest,
  type Sandbox,
  type SandboxRunInput,
  type SandboxRunRequest,
  type SandboxRunResult,
} from "../types";
import {
  BoundedLineReader,
  MAX_ANSWER_LINE_BYTES,
  protocolFailure,
  resultFromAnswer,
} from "./child-protocol";

export interface PythonPoolOptions {
  /** Children kept loaded and waiting (default 2). */
  size?: number;
  /** Runs at once; more wait for a child (default `size`). */
  maxConcurrent?: number;
  /** RSS a child may use beyond `memory_mb` before it is killed (default 320 MiB: Node + Pyodide). */
  rssOverheadMb?: number;
  /** How often RSS is read, ms (default 25). */
  rssPollMs?: number;
  /** Load children from a Pyodide memory snapshot (default true; falls back to a full load). */
  snapshot?: boolean;
  /** Where warnings go (no `unshare`, no snapshot); default `console.warn`. */
  onWarning?: (message: string) => void;
}

interface WarmChild {
  process: ChildProcess;
  lines: BoundedLineReader;
}

const CHILD_SCRIPT = fileURLToPath(new URL("./pyodide-child.mjs", import.meta.url));
const STARTUP_TIMEOUT_MS = 30_000;
const READY_LINE = '{"ready":true}';
const MAX_STARTUP_FAILURES = 3;

/**
 * The `unshare` flags that start a process without network here, or null: `-n` as root, `-rn`
 * (a user namespace mapping the caller to root inside it) for anyone else, where the kernel allows
 * unprivileged user namespaces.
 */
export function networkIsolationFlags(): string[] | null {
  if (process.platform !== "linux") return null;
  for (const flags of [["-n"], ["-rn"]]) {
    const probe = spawnSync("unshare", [...flags, "true"], { stdio: "ignore", timeout: 5000 });
    if (probe.status === 0) return flags;
  }
  return null;
}

/** Whether this machine can start a process without network (`unshare -n` or `-rn`). */
export function networkIsolationAvailable(): boolean {
  return networkIsolationFlags() !== null;
}

export class PythonProcessPool implements Sandbox {
  private readonly size: number;
  private readonly maxConcurrent: number;
  private readonly rssOverheadMb: number;
  private readonly rssPollMs: number;
  private readonly warn: (message: string) => void;
  private readonly readablePaths: string[];
  private readonly unshareFlags: string[] | null;
  private readonly useSnapshot: boolean;
  private snapshotPath: string | null = null;
  private tempDir: string | null = null;
  private prepared: Promise<void> | null = null;
  private readonly warm: WarmChild[] = [];
  private readonly fullWaiters: Array<() => void> = [];
  private readonly waiting: Array<(child: WarmChild | Error) => void> = [];
  private readonly live = new Set<ChildProcess>();
  private readonly busy = new Set<ChildProcess>();
  private starting = 0;
  private running = 0;
  private readonly slotWaiters: Array<() => void> = [];
  private startupFailures = 0;
  private lastStartupError = "";
  private closed = false;

  constructor(options: PythonPoolOptions = {}) {
    this.size = Math.max(1, options.size ?? 2);
    this.maxConcurrent = Math.max(1, options.maxConcurrent ?? this.size);
    this.rssOverheadMb = options.rssOverheadMb ?? 320;
    this.rssPollMs = options.rssPollMs ?? 25;
    this.useSnapshot = options.snapshot ?? true;
    this.warn = options.onWarning ?? ((message) => console.warn(message));
    const require = createRequire(import.meta.url);
    const pyodideDir = realpathSync(dirname(require.resolve("pyodide/package.json")));
    // Not Pyodide's `ws` dependency: without it its socket layer cannot open a WebSocket.
    this.readablePaths = [`${pyodideDir}/`, realpathSync(CHILD_SCRIPT)];
    this.unshareFlags = networkIsolationFlags();
    if (!this.unshareFlags) {
      this.warn(
        "sandbox: `unshare -n` (or `-rn` without root) is not available here; Python runs WITHOUT a network namespace (Node's permission model and the sealed Pyodide still apply)",
      );
    }
  }

  /** Whether children run in their own network namespace. */
  get networkIsolated(): boolean {
    return this.unshareFlags !== null;
  }

  /** Make the snapshot and fill the pool; `run` calls it too. */
  start(): Promise<void> {
    if (!this.prepared) {
      this.prepared = this.makeSnapshot().then(() => this.refill());
    }
    return this.prepared;
  }

  async run(input: SandboxRunInput): Promise<SandboxRunResult> {
    const request = parseSandboxRequest(input);
    if (request.language !== "python") {
      return failedRun("unavailable", "this pool runs python only", 0);
    }
    if (this.closed) return failedRun("unavailable", "the sandbox is closed", 0);
    await this.start();
    await this.acquireSlot();
    try {
      const child = await this.takeWarm();
      if (child instanceof Error) return failedRun("unavailable", child.message, 0);
      return await this.runOn(child, request);
    } finally {
      this.releaseSlot();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const child of this.live) child.kill("SIGKILL");
    this.live.clear();
    this.warm.length = 0;
    for (const waiter of this.waiting.splice(0)) waiter(new Error("the sandbox is closed"));
    for (const done of this.fullWaiters.splice(0)) done();
    process.off("exit", this.removeTempDir);
    this.removeTempDir();
  }

  private readonly removeTempDir = () => {
    if (this.tempDir) rmSync(this.tempDir, { recursive: true, force: true });
  };

  /** Resolves once every slot of the pool holds a warm child (or the pool closed). */
  whenFull(): Promise<void> {
    if (this.closed || this.warm.length >= this.size) return Promise.resolve();
    return new Promise((resolve) => this.fullWaiters.push(resolve));
  }

  /** Children loaded and waiting for a run. */
  get warmCount(): number {
    return this.warm.length;
  }

  /** Processes alive now (warm, starting or running): for tests and the bench. */
  get processCount(): number {
    return this.live.size;
  }

  /** Process ids of the children running code now: for tests that kill one from outside. */
  get runningPids(): number[] {
    return [...this.busy].flatMap((child) => (child.pid === undefined ? [] : [child.pid]));
  }

  private async makeSnapshot(): Promise<void> {
    if (!this.useSnapshot) return;
    this.tempDir = mkdtempSync(join(tmpdir(), "atropos-sandbox-"));
    // The CLI ends with process.exit() without closing the pool: the snapshot must not stay behind.
    process.once("exit", this.removeTempDir);
    const path = join(this.tempDir, "pyodide.snapshot");
    const child = this.spawnChild(["--make-snapshot", path], [`--allow-fs-write=${path}`]);
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => child.kill("SIGKILL"), STARTUP_TIMEOUT_MS * 2);
      child.on("exit", (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    try {
      if (code === 0 && readFileSync(path).byteLength > 0) {
        this.snapshotPath = path;
        this.readablePaths.push(path);
        return;
      }
    } catch {
      // no snapshot file: fall through to the warning
    }
    this.warn("sandbox: could not make a Pyodide memory snapshot; children load Pyodide in full");
  }

  private spawnChild(args: string[], extraNodeFlags: string[] = []): ChildProcess {
    const permission =
      Number(process.versions.node.split(".")[0]) >= 23
        ? "--permission"
        : "--experimental-permission";
    const nodeArgs = [
      "--no-warnings",
      permission,
      ...this.readablePaths.map((path) => `--allow-fs-read=${path}`),
      ...extraNodeFlags,
      "--max-old-space-size=128",
      CHILD_SCRIPT,
      ...args,
    ];
    const [command, commandArgs] = this.unshareFlags
      ? ["unshare", [...this.unshareFlags, process.execPath, ...nodeArgs]]
      : [process.execPath, nodeArgs];
    // An empty environment: nothing of the host's (tokens, paths) reaches the code.
    const env: Record<string, string> = this.snapshotPath
      ? { SANDBOX_SNAPSHOT: this.snapshotPath }
      : {};
    const child = spawn(command, commandArgs, {
      cwd: tmpdir(),
      // why: ProcessEnv is widened with the Worker's vars by the generated types; this is a plain map.
      env: env as NodeJS.ProcessEnv,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.live.add(child);
    child.on("exit", () => this.live.delete(child));
    child.stderr?.resume();
    // A child killed while its request is being written must not crash the host (EPIPE).
    child.stdin?.on("error", () => undefined);
    // Warm children must not keep the host process alive; a run's own timer does while it lasts.
    child.unref();
    for (const stream of [child.stdin, child.stdout, child.stderr]) {
      (stream as unknown as { unref?: () => void } | null)?.unref?.();
    }
    return child;
  }

  private refill(): void {
    while (!this.closed && this.warm.length + this.starting < this.size) {
      if (this.startupFailures >= MAX_STARTUP_FAILURES) {
        const error = new Error(`the Python sandbox cannot start: ${this.lastStartupError}`);
        for (const waiter of this.waiting.splice(0)) waiter(error);
        return;
      }
      this.starting++;
      this.startOne()
        .then((child) => {
          this.startupFailures = 0;
          const waiter = this.waiting.shift();
          if (waiter) waiter(child);
          else this.warm.push(child);
          if (this.warm.length >= this.size) for (const done of this.fullWaiters.splice(0)) done();
        })
        .catch((err: unknown) => {
          this.startupFailures++;
          this.lastStartupError = errorMessage(err);
        })
        .finally(() => {
          this.starting--;
          this.refill();
        });
    }
  }

  private startOne(): Promise<WarmChild> {
    const child = this.spawnChild([]);
    const lines = new BoundedLineReader(child.stdout!, MAX_ANSWER_LINE_BYTES);
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2000);
    });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error(`no ready signal within ${STARTUP_TIMEOUT_MS} ms`));
      }, STARTUP_TIMEOUT_MS);
      const exitedEarly = (code: number | null) => {
        clearTimeout(timer);
        reject(new Error(`child exited (${code}) before it was ready: ${stderr.trim()}`));
      };
      child.once("exit", exitedEarly);
      void lines.next().then((event) => {
        clearTimeout(timer);
        child.off("exit", exitedEarly);
        const line = event.kind === "line" ? event.line : "";
        if (line.trim() === READY_LINE) {
          resolve({ process: child, lines });
        } else {
          child.kill("SIGKILL");
          reject(new Error(`unexpected first line from child: ${line.slice(0, 200)}`));
        }
      });
    });
  }

  private takeWarm(): Promise<WarmChild | Error> {
    const alive = (c: WarmChild) => c.process.exitCode === null && c.process.signalCode === null;
    let child = this.warm.shift();
    // A warm child that died while waiting (killed from outside) is skipped.
    while (child && !alive(child)) child = this.warm.shift();
    this.refill();
    if (child) return Promise.resolve(child);
    if (this.startupFailures >= MAX_STARTUP_FAILURES) {
      return Promise.resolve(
        new Error(`the Python sandbox cannot start: ${this.lastStartupError}`),
      );
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private acquireSlot(): Promise<void> {
    if (this.running < this.maxConcurrent) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.slotWaiters.push(resolve));
  }

  private releaseSlot(): void {
    const next = this.slotWaiters.shift();
    if (next) next();
    else this.running--;
  }

  private runOn(child: WarmChild, request: SandboxRunRequest): Promise<SandboxRunResult> {
    const started = performance.now();
    const pid = child.process.pid;
    const rssLimitKb = (request.memory_mb + this.rssOverheadMb) * 1024;
    /** The child's RSS when it is over the limit, else null. */
    const overLimit = (): number | null => {
      const rss = pid === undefined ? null : rssKb(pid);
      return rss !== null && rss > rssLimitKb ? rss : null;
    };
    const memoryFailure = (rss: number) =>
      failedRun(
        "memory",
        `used more than ${request.memory_mb} MiB (process RSS ${Math.round(rss / 1024)} MiB)`,
        performance.now() - started,
      );
    // Already over before the code runs (the interpreter alone): refused at once, not after a
    // poll that a quick run could finish before.
    const before = overLimit();
    if (before !== null) {
      child.process.kill("SIGKILL");
      return Promise.resolve(memoryFailure(before));
    }
    return new Promise<SandboxRunResult>((resolve) => {
      let settled = false;
      let killedFor: "timeout" | "memory" | null = null;
      this.busy.add(child.process);
      const finish = (result: SandboxRunResult) => {
        if (settled) return;
        settled = true;
        this.busy.delete(child.process);
        clearTimeout(timer);
        clearInterval(watchdog);
        child.process.kill("SIGKILL");
        resolve(result);
      };
      const timer = setTimeout(() => {
        killedFor = "timeout";
        finish(
          failedRun(
            "timeout",
            `timed out after ${request.timeout_ms} ms`,
            performance.now() - started,
          ),
        );
      }, request.timeout_ms);
      const watchdog = setInterval(() => {
        const rss = overLimit();
        if (rss !== null) {
          killedFor = "memory";
          finish(memoryFailure(rss));
        }
      }, this.rssPollMs);
      // "close", not "exit": the answer may still be in the pipe when the process has exited.
      child.process.once("close", (code, signal) => {
        if (killedFor) return;
        finish(
          failedRun(
            "runtime",
            `the sandbox process exited (${signal ?? code}) without an answer`,
            performance.now() - started,
          ),
        );
      });
      // Whatever the child sends (it runs the code, which can write to this stream) ends the run
      // as a result: a cut-off, oversized or malformed answer is a `runtime` failure of this run.
      void child.lines.next().then((event) => {
        const wallMs = performance.now() - started;
        if (event.kind === "line") finish(resultFromAnswer(event.line, wallMs));
        else if (event.kind === "too-long") {
          finish(protocolFailure(`a line of over ${MAX_ANSWER_LINE_BYTES} bytes`, wallMs));
        }
        // "end": the exit handler reports the run.
      });
      child.process.stdin?.write(
        `${JSON.stringify({ ...request, limits: SANDBOX_ANSWER_LIMITS })}\n`,
      );
    });
  }
}

/** Resident memory of a process in KiB from /proc; null where /proc is not there. */
function rssKb(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = /VmRSS:\s+(\d+)/.exec(status);
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}
