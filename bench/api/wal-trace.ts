/**
 * `--wal`: what the local D1 writes to disk per lease + ack, and when SQLite checkpoints it.
 * Miniflare keeps each D1 database in a SQLite file in WAL mode; every commit appends the pages it
 * changed to the WAL (a 4 KiB write each) and syncs it, and the commit that takes the WAL past
 * 1,000 pages also checkpoints it: copies the pages into the database file and syncs that, on the
 * runtime's one thread, inside whichever request made the commit. This traces those writes and
 * syncs with strace (Linux; it slows every traced call, so time leases without it).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

const PAGE_BYTES = 4096;

export interface WalCounts {
  /** Pages appended to the D1 WAL. */
  walPages: number;
  /** Checkpoints: syncs of the D1 database file, as epoch ms. */
  checkpoints: number[];
}

/** The process holding the D1 WAL under `persistDir` open, with that WAL's and database's fds. */
function d1Files(persistDir: string): { pid: number; wal: string; db: string } {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    const byPath = new Map<string, string>();
    for (const fd of fds) {
      try {
        byPath.set(readlinkSync(`/proc/${entry}/fd/${fd}`), fd);
      } catch {
        // closed meanwhile
      }
    }
    for (const [path, fd] of byPath) {
      // The database's own file, not the simulator's metadata.sqlite beside it.
      if (
        !path.startsWith(persistDir) ||
        !/\/d1\/.*\/(?!metadata\.)[^/]+\.sqlite-wal$/.test(path)
      ) {
        continue;
      }
      const db = byPath.get(path.slice(0, -"-wal".length));
      if (db) return { pid: Number(entry), wal: fd, db };
    }
  }
  throw new Error(`--wal: no process holds a D1 WAL open under ${persistDir}`);
}

export class WalTrace {
  private constructor(
    private readonly strace: ChildProcess,
    private readonly out: string,
    private readonly fds: { wal: string; db: string },
  ) {}

  /** Starts tracing the runtime that keeps the D1 database under `persistDir` (after it opened it). */
  static async start(persistDir: string, out: string): Promise<WalTrace> {
    const { pid, wal, db } = d1Files(persistDir);
    const strace = spawn(
      "strace",
      [
        "-f",
        "--seccomp-bpf",
        "-ttt",
        "-e",
        "trace=pwrite64,fsync,fdatasync",
        "-p",
        String(pid),
        "-o",
        out,
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    strace.stderr?.on("data", (d: Buffer) => {
      stderr += String(d);
    });
    const failed = new Promise<never>((_, reject) => {
      strace.once("error", (e) =>
        reject(new Error(`--wal needs strace on the PATH (${e.message})`)),
      );
      strace.once("exit", (code) =>
        reject(new Error(`--wal: strace exited (${code}): ${stderr.trim()}`)),
      );
    });
    // strace reports attaching (to the process and, with -f, its threads) before it traces.
    const attached = new Promise<void>((resolve) => {
      const check = () => (/Process \d+ attached/.test(stderr) ? resolve() : undefined);
      strace.stderr?.on("data", check);
    });
    await Promise.race([attached, failed]);
    failed.catch(() => {});
    return new WalTrace(strace, out, { wal, db });
  }

  /** Stops tracing; what was written and synced meanwhile. */
  async stop(): Promise<WalCounts> {
    const exited = new Promise((resolve) => this.strace.once("exit", resolve));
    this.strace.kill("SIGINT");
    await exited;
    return parseTrace(readFileSync(this.out, "utf8"), this.fds);
  }
}

/** Counts from strace's lines (`PID EPOCH.US call(fd, …) = result`). */
export function parseTrace(text: string, fds: { wal: string; db: string }): WalCounts {
  let walPages = 0;
  const checkpoints: number[] = [];
  for (const line of text.split("\n")) {
    const write = /^\d+\s+[\d.]+ pwrite64\((\d+), .*, (\d+), \d+\) = \d+/.exec(line);
    if (write && write[1] === fds.wal && Number(write[2]) === PAGE_BYTES) walPages++;
    const sync = /^\d+\s+([\d.]+) f(?:data)?sync\((\d+)\)/.exec(line);
    if (sync && sync[2] === fds.db) checkpoints.push(Number(sync[1]) * 1000);
  }
  return { walPages, checkpoints };
}
