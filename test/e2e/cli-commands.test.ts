/**
 * The CLI commands as a user starts them: `sim` answers on its port, `dev` serves the API,
 * `serve` runs an env from Node against a real `npm run dev` until Ctrl-C, and `bench` runs a
 * (shortened) benchmark.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type DevServer, freePort, postJson, REGISTRATION, ROOT, startDevServer } from "./harness";

const children: ChildProcess[] = [];
let dev: DevServer | null = null;
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null) process.kill(-c.pid!, "SIGKILL");
  }
  await dev?.stop();
  dev = null;
});

function cli(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [`${ROOT}/bin/atropos-edge.mjs`, ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
    env: { ...process.env, ...env },
  });
  children.push(child);
  let output = "";
  child.stdout?.on("data", (d) => {
    output += String(d);
  });
  child.stderr?.on("data", (d) => {
    output += String(d);
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  return { child, output: () => output, exited };
}

async function until(check: () => Promise<boolean> | boolean, what: string, ms = 60_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe("atropos-edge CLI commands", () => {
  it("sim serves the OpenAI wire format on the requested port and says it is a test double", async () => {
    const port = await freePort();
    const sim = cli(["sim", "--port", String(port)]);
    await until(() => sim.output().includes(`127.0.0.1:${port}`), "the simulator to start");
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim-policy", messages: [{ role: "user", content: "hi" }] }),
    });
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]!.message.content.length).toBeGreaterThan(0);
    expect(sim.output()).toContain("test double");
    process.kill(-sim.child.pid!, "SIGINT");
    expect(await sim.exited).not.toBeNull();
  });

  it("dev serves the API until interrupted; state persists, also across --watch (wrangler dev)", async () => {
    const port = await freePort();
    const state = mkdtempSync(join(tmpdir(), "cli-dev-"));
    const serveUntilInterrupted = async (extra: string[], check: () => Promise<void>) => {
      const devCmd = cli(["dev", "--port", String(port), "--persist-to", state, ...extra]);
      await until(async () => {
        try {
          return (await fetch(`http://127.0.0.1:${port}/`)).ok;
        } catch {
          return false;
        }
      }, "the dev server");
      await check();
      process.kill(-devCmd.child.pid!, "SIGINT");
      expect(await devCmd.exited, devCmd.output()).toBe(0);
    };
    const info = async () => (await fetch(`http://127.0.0.1:${port}/info`)).json();
    await serveUntilInterrupted([], async () => {
      expect(await info()).toEqual({ batch_size: -1, max_token_len: -1 });
      await postJson(`http://127.0.0.1:${port}/register`, { ...REGISTRATION, batch_size: 24 });
    });
    await serveUntilInterrupted(["--watch"], async () => {
      expect(await info()).toEqual({ batch_size: 24, max_token_len: REGISTRATION.max_token_len });
    });
  });

  it("bench envs --cpu-only prints the CPU-per-rollout measurement", async () => {
    const bench = cli(["bench", "envs", "--cpu-only"], { BENCH_CPU_SAMPLES: "5" });
    expect(await bench.exited, bench.output()).toBe(0);
    expect(bench.output()).toMatch(/"cpu_ms_per_rollout_median":\d/);
  });

  it("serve runs an env against a running API until interrupted, then exits 0", async () => {
    dev = await startDevServer();
    await postJson(`${dev.url}/register`, { ...REGISTRATION, batch_size: 8 });
    const serve = cli(["serve", "--env", "letter_counting", "--api", dev.url, "--group-size", "4"]);
    const status = async () =>
      ((await (await fetch(`${dev!.url}/status`)).json()) as { queue_size: number }).queue_size;
    await until(async () => (await status()) >= 2, "groups from the served env");
    expect(serve.output()).toMatch(
      /registered as env_id 0 .*stops once the trainer's step plus the batches queued pass 1000/,
    );
    // Said before it registered, too.
    expect(serve.output()).toMatch(/stops once .* pass total_steps 1000 \(env\.total_steps/);
    process.kill(-serve.child.pid!, "SIGINT");
    expect(await serve.exited).toBe(0);
    expect(serve.output()).toMatch(
      /stopped at trainer step \d+ \(stopped by signal\): \d+ groups submitted, \d+ dropped/,
    );
  });
});
