/**
 * Starts real dev servers (`npm run dev`, scripts/dev.mjs) on free loopback ports with fresh
 * state directories, for end-to-end tests. Every process started here is stopped by `stop()`.
 */
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../scripts/ports.mjs";
import { type DevProcess, startDevProcess } from "../../src/cli/dev-process";

export { freePort };

export const ROOT = join(import.meta.dirname, "..", "..");

export interface DevServer extends DevProcess {
  port: number;
  persistTo: string;
}

/** A real dev server (`npm run dev`) on a free loopback port with a fresh state directory. */
export async function startDevServer(
  options: {
    port?: number;
    persistTo?: string;
    vars?: Record<string, string>;
    /** The server's environment (default: this process's, without API_TOKEN). */
    env?: NodeJS.ProcessEnv;
  } = {},
): Promise<DevServer> {
  const port = options.port ?? (await freePort());
  const persistTo = options.persistTo ?? mkdtempSync(join(tmpdir(), "atropos-edge-state-"));
  // Hermetic: an API_TOKEN exported in the shell running the tests does not lock the server.
  const env = options.env ?? { ...process.env, API_TOKEN: "" };
  const dev = await startDevProcess({ port, persistTo, vars: options.vars, env });
  const server = { ...dev, port, persistTo };
  started.push(server);
  return server;
}

// The dev servers this test file started, stopped or not (their output outlives them).
const started: DevServer[] = [];

/** The dev servers this test file started, oldest first. */
export function devServersStarted(): readonly DevServer[] {
  return started;
}

export const REGISTRATION = {
  wandb_group: "g",
  wandb_project: "p",
  batch_size: 8,
  max_token_len: 2048,
  checkpoint_dir: "checkpoints",
  save_checkpoint_interval: 10,
  starting_step: 0,
  num_steps: 100,
};

/** A deterministic group of `size` sequences; `seed` makes its content unique. */
export function makeGroup(seed: number, size: number, envId: number | null, length = 8) {
  const tokens: number[][] = [];
  const masks: number[][] = [];
  const logprobs: number[][] = [];
  for (let s = 0; s < size; s++) {
    const seq = Array.from({ length }, (_, i) => (seed * 7919 + s * 104729 + i) % 150000);
    tokens.push(seq);
    masks.push(seq.map((t, i) => (i < length / 2 ? -100 : t)));
    logprobs.push(seq.map((_, i) => (i < length / 2 ? 1.0 : -((seed + s + i) % 97) / 10)));
  }
  return {
    tokens,
    masks,
    scores: Array.from({ length: size }, (_, s) => ((seed + s) % 3) - 1),
    inference_logprobs: logprobs,
    messages: tokens.map((_, s) => [
      { role: "user", content: `question ${seed}` },
      { role: "assistant", content: `answer ${seed}.${s}` },
    ]),
    env_id: envId,
  };
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

/** Registers a trainer and envs in `run` and submits `groups` groups round-robin across envs. */
export async function seedRun(
  url: string,
  opts: {
    run?: string;
    envs?: { name: string; groupSize: number }[];
    groups?: number;
    batchSize?: number;
  },
) {
  const base = !opts.run || opts.run === "default" ? url : `${url}/runs/${opts.run}`;
  await postJson(`${base}/register`, { ...REGISTRATION, batch_size: opts.batchSize ?? 8 });
  const envs = opts.envs ?? [{ name: "gsm8k", groupSize: 4 }];
  const envIds: number[] = [];
  for (const e of envs) {
    const r = await postJson(`${base}/register-env`, {
      max_token_length: 2048,
      desired_name: e.name,
      weight: 1,
      group_size: e.groupSize,
    });
    envIds.push(r.json().env_id);
  }
  for (let i = 0; i < (opts.groups ?? 8); i++) {
    const k = i % envs.length;
    const r = await postJson(
      `${base}/scored_data`,
      makeGroup(i + 1, envs[k]!.groupSize, envIds[k]!),
    );
    if (r.status !== 200) throw new Error(`seed failed: ${r.status} ${r.text}`);
  }
  return { base, envIds };
}

/** Runs the CLI in its own process group; kills the group if it outlives the bound. */
export async function runCli(
  args: string[],
  { cwd = ROOT, boundMs = 120_000 }: { cwd?: string; boundMs?: number } = {},
): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [join(ROOT, "bin", "atropos-edge.mjs"), ...args], {
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout.on("data", (d) => {
    output += String(d);
  });
  child.stderr.on("data", (d) => {
    output += String(d);
  });
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => {
      process.kill(-child.pid!, "SIGKILL");
      resolve(null);
    }, boundMs);
    child.on("exit", (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  return { code, output };
}
