/**
 * `atropos-edge serve` keeps the env's checkpoints in the rollout API: with the trainer's
 * save_checkpoint_interval, GET …/checkpoints lists them, and a restarted serve resumes the
 * env's state. The env is agent_tasks with an adaptive curriculum: the first run moves up to
 * level 2; the second can never move up by itself (advance_window 1000), so a level of 2 in its
 * checkpoints can only come from the restored state.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { type DevServer, postJson, REGISTRATION, ROOT, startDevServer } from "./harness";

const children: ChildProcess[] = [];
let dev: DevServer | null = null;
const dir = mkdtempSync(join(tmpdir(), "serve-checkpoints-"));
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) process.kill(-c.pid!, "SIGKILL");
  await dev?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function serve(config: string) {
  const child = spawn(
    process.execPath,
    [
      `${ROOT}/bin/atropos-edge.mjs`,
      "serve",
      "--env",
      "agent_tasks",
      "--api",
      dev!.url,
      "--group-size",
      "4",
      "--config",
      config,
    ],
    { cwd: dir, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  children.push(child);
  let output = "";
  // Lines the test waits for: serve prints after its request returns, so the API can show a
  // checkpoint before the line that reports it has arrived through the pipe.
  const waiting: { pattern: RegExp; found: () => void }[] = [];
  const read = (d: Buffer) => {
    output += String(d);
    for (const w of [...waiting]) {
      if (w.pattern.test(output)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.found();
      }
    }
  };
  child.stdout?.on("data", read);
  child.stderr?.on("data", read);
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  /** Resolves once serve has printed a match of `pattern`; rejects if it exits first. */
  const printed = (pattern: RegExp) =>
    pattern.test(output)
      ? Promise.resolve()
      : new Promise<void>((found, reject) => {
          waiting.push({ pattern, found });
          void exited.then(() => reject(new Error(`serve exited without ${pattern}:\n${output}`)));
        });
  return { child, output: () => output, exited, printed };
}

interface Checkpoint {
  step: number;
  state: { level: number; next: number };
}

/** Trainer steps (lease → ack) until `done`, at most 60 s. */
async function trainUntil(
  done: () => Promise<boolean>,
  what: string,
  output?: () => string,
): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await done())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; serve said:\n${output?.() ?? ""}`);
    }
    const lease = await postJson(`${dev!.url}/v1/runs/default/batches/lease`, {
      lease_seconds: 30,
    });
    if (lease.status === 200) {
      const { batch_id, lease_id } = lease.json() as { batch_id: string; lease_id: string };
      await postJson(`${dev!.url}/v1/runs/default/batches/${batch_id}/ack`, { lease_id });
    } else await new Promise((r) => setTimeout(r, 250));
  }
}

async function latest(): Promise<Checkpoint | null> {
  const res = await fetch(`${dev!.url}/v1/runs/default/envs/0/checkpoints/latest`);
  return res.status === 200 ? ((await res.json()) as Checkpoint) : null;
}

describe("serve: env checkpoints in the rollout API", () => {
  it("saves every checkpoint_interval steps, and a restarted serve resumes the curriculum level", async () => {
    dev = await startDevServer();
    await postJson(`${dev.url}/register`, { ...REGISTRATION, save_checkpoint_interval: 1 });
    const tasks = readFileSync(join(ROOT, "examples/agent-tasks/tasks.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((t) => t.evaluation.kind === "reference");
    const env = { tasks, curriculum: "adaptive", advance_threshold: 0, advance_window: 1 };
    writeFileSync(join(dir, "first.yaml"), stringify({ env }));
    writeFileSync(join(dir, "second.yaml"), stringify({ env: { ...env, advance_window: 1000 } }));

    const first = serve("first.yaml");
    await trainUntil(
      async () => (await latest())?.state.level === 2,
      "a level-2 checkpoint",
      first.output,
    );
    const list = (await (await fetch(`${dev.url}/v1/runs/default/envs/0/checkpoints`)).json()) as {
      checkpoints: { step: number }[];
    };
    expect(list.checkpoints.length).toBeGreaterThan(0);
    await first.printed(/checkpoint saved at step \d+/);
    process.kill(-first.child.pid!, "SIGINT");
    expect(await first.exited, first.output()).toBe(0);
    const saved = (await latest())!;

    const second = serve("second.yaml");
    await trainUntil(
      async () => ((await latest())?.step ?? 0) > saved.step,
      "a checkpoint of the restarted serve",
    );
    await second.printed(/registered as env_id 0/);
    await second.printed(/resumed the env's state from its checkpoint at or before step \d+/);
    const after = (await latest())!;
    expect(after.state.level).toBe(2);
    expect(after.state.next).toBeGreaterThanOrEqual(saved.state.next);
    process.kill(-second.child.pid!, "SIGINT");
    expect(await second.exited, second.output()).toBe(0);
  }, 240_000);
});
