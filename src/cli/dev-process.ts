/**
 * Runs the local dev server (scripts/dev.mjs: the Worker on workerd with local D1/R2/Queues/DOs) as
 * a child in its own process group, so stopping it stops workerd and everything else it spawned:
 * no orphans.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

const WRANGLER_CONFIGS = ["wrangler.jsonc", "wrangler.json", "wrangler.toml"];

/**
 * The project whose Worker the CLI serves: the current directory when it has a wrangler config
 * (a project made by `atropos-edge init`), else this package (its own Worker and example envs).
 */
export function projectRoot(cwd = process.cwd()): string {
  return WRANGLER_CONFIGS.some((f) => existsSync(join(cwd, f))) ? cwd : PROJECT_ROOT;
}

export interface DevProcess {
  url: string;
  child: ChildProcess;
  logs(): string;
  stop(): Promise<void>;
}

/**
 * Whether the server answers `/` (it printed that it is ready, so it listens): a few tries, in
 * case the first request races the socket.
 */
async function answers(url: string, deadline: number, alive: () => boolean): Promise<boolean> {
  for (let attempt = 0; attempt < 8 && Date.now() < deadline && alive(); attempt++) {
    try {
      const res = await fetch(`${url}/`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.ok) return true;
    } catch {
      // not answering yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

export async function startDevProcess(options: {
  port: number;
  persistTo: string;
  startTimeoutMs?: number;
  /** Extra Worker vars (e.g. API_TOKEN), passed as `--var NAME:value`. */
  vars?: Record<string, string>;
  /** The dev server's environment (default: this process's; dev.mjs reads Worker vars from it). */
  env?: NodeJS.ProcessEnv;
  /** Opens the Worker's inspector on this port (profilers, heap sampling). */
  inspectorPort?: number;
  /** The project whose wrangler config and Worker entry are served (default: see dev.mjs). */
  projectRoot?: string;
  /** A Worker entry to serve instead of the config's `main` (its bindings stay the config's). */
  entry?: string;
  /** Each start-up line the server prints on stdout (bundling, migrations, tokenizers), as it comes. */
  onProgress?: (line: string) => void;
}): Promise<DevProcess> {
  const varArgs = Object.entries(options.vars ?? {}).flatMap(([k, v]) => ["--var", `${k}:${v}`]);
  if (options.inspectorPort) varArgs.push("--inspector-port", String(options.inspectorPort));
  varArgs.push("--project", options.projectRoot ?? projectRoot());
  if (options.entry) varArgs.push("--entry", options.entry);
  const child = spawn(
    process.execPath,
    [
      join(PROJECT_ROOT, "scripts", "dev.mjs"),
      "--port",
      String(options.port),
      "--persist-to",
      options.persistTo,
      ...varArgs,
    ],
    {
      cwd: process.cwd(),
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: options.env ?? process.env,
    },
  );
  let output = "";
  // Wakes the start-up wait below on every chunk of output and on exit.
  let wake: () => void = () => {};
  const keep = (d: Buffer) => {
    output = (output + String(d)).slice(-20_000);
    wake();
  };
  let ready = false;
  let partial = "";
  child.stdout?.on("data", (d: Buffer) => {
    keep(d);
    if (!options.onProgress) return;
    const lines = (partial + String(d)).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      if (line.startsWith("dev: ready on")) ready = true;
      if (!ready && line.startsWith("dev: ")) options.onProgress(line);
    }
  });
  child.stderr?.on("data", keep);
  // Its last lines (why it stopped) can come after the exit: reported once its output has
  // closed, or a second after the exit when something it started still holds the pipes.
  let exited = false;
  child.once("exit", () => {
    const late = setTimeout(reportExit, 1000).unref();
    child.once("close", () => {
      clearTimeout(late);
      reportExit();
    });
  });
  function reportExit() {
    exited = true;
    wake();
  }
  const url = `http://127.0.0.1:${options.port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    killGroup(child, "SIGTERM");
    const timer = setTimeout(() => killGroup(child, "SIGKILL"), 5000);
    await gone;
    clearTimeout(timer);
    // workerd may outlive its parent briefly; make sure the whole group is gone.
    killGroup(child, "SIGKILL");
  };
  const startTimeoutMs = options.startTimeoutMs ?? 90_000;
  const deadline = Date.now() + startTimeoutMs;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    wake();
  }, startTimeoutMs);
  try {
    for (;;) {
      if (exited) {
        throw new Error(
          `the dev server exited early (is port ${options.port} in use? try --port N):\n${output.slice(-4000)}`,
        );
      }
      // Only our own server counts: another one answering on the port must not pass for it.
      if (ready || output.includes("dev: ready on")) {
        ready = true;
        if (await answers(url, deadline, () => !exited)) break;
      }
      if (timedOut || Date.now() > deadline) {
        await stop();
        throw new Error(`the dev server did not answer on ${url} in time:\n${output.slice(-4000)}`);
      }
      if (!ready) await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    clearTimeout(timer);
    wake = () => {};
  }
  return { url, child, logs: () => output, stop };
}
