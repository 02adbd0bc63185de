/**
 * The Python package (python/, import atropos_edge): its pytest suite and ruff, a wheel installed
 * into a fresh venv, the package against `npm run dev`, and TRL's GRPOTrainer training a tiny
 * random model from 3 leased batches. The venv (CPU PyTorch, transformers, TRL, pytest, ruff)
 * comes from python/install_dev_venv.sh, cached under node_modules/.cache and reused.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, postJson, REGISTRATION, ROOT, startDevServer } from "./harness";

const run = promisify(execFile);
const PACKAGE = join(ROOT, "python");
const env = { ...process.env, PYTHONPATH: PACKAGE, PYTHONDONTWRITEBYTECODE: "1" };
/** The Python files this package owns (other examples keep their own style). */
const OWNED = [
  "python",
  "examples/python/lease_trainer.py",
  "examples/python/grpo_real_trainer.py",
  "examples/python/trl_grpo_trainer.py",
  "test/e2e/python/package_client.py",
  "test/e2e/python/contributor_agent.py",
];

/** A group of 4 whose token ids fit the 400-token test tokenizer; half prompt. */
function smallGroup(seed: number, envId: number) {
  const tokens = Array.from({ length: 4 }, (_, s) =>
    Array.from({ length: 10 }, (_, i) => 3 + ((seed * 31 + s * 7 + i * 13) % 390)),
  );
  return {
    tokens,
    masks: tokens.map((seq) => seq.map((t, i) => (i < 5 ? -100 : t))),
    scores: [1, -1, 0.5, -0.5],
    inference_logprobs: tokens.map((seq) => seq.map((_, i) => (i < 5 ? 1 : -2 - (i % 3) / 2))),
    env_id: envId,
  };
}

async function seed(url: string, runName: string, groups: number) {
  const base = `${url}/runs/${runName}`;
  expect((await postJson(`${base}/register`, REGISTRATION)).status).toBe(200);
  const envReg = await postJson(`${base}/register-env`, {
    max_token_length: 2048,
    desired_name: "tiny",
    weight: 1,
    group_size: 4,
  });
  const envId = envReg.json().env_id as number;
  for (let i = 0; i < groups; i++) {
    const res = await postJson(`${base}/scored_data`, smallGroup(i + 1, envId));
    expect(res.status).toBe(200);
  }
}

describe("python/ (atropos_edge)", () => {
  let server: DevServer;
  let python: string;
  beforeAll(async () => {
    const [install, dev] = await Promise.all([
      // First run: about a minute and ~1.5 GB from the local pip mirror; later runs reuse it.
      run("bash", [join(PACKAGE, "install_dev_venv.sh")], { timeout: 600_000 }),
      startDevServer(),
    ]);
    python = install.stdout.trim().split("\n").at(-1) ?? "";
    server = dev;
  }, 660_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("is ruff-clean, passes mypy --strict, and its pytest suite passes", async () => {
    await run(python, ["-m", "ruff", "check", "--config", "python/pyproject.toml", ...OWNED], {
      cwd: ROOT,
    });
    await run(
      python,
      ["-m", "ruff", "format", "--check", "--config", "python/pyproject.toml", ...OWNED],
      { cwd: ROOT },
    );
    await run(python, ["-m", "mypy", "--config-file", "pyproject.toml"], {
      cwd: PACKAGE,
      timeout: 180_000,
    });
    const { stdout } = await run(
      python,
      ["-m", "pytest", "-q", "-p", "no:cacheprovider", join(PACKAGE, "tests")],
      { cwd: PACKAGE, env, timeout: 300_000, maxBuffer: 16 << 20 },
    );
    expect(stdout).toMatch(/\d+ passed/);
    expect(stdout).not.toMatch(/failed|skipped/);
  }, 360_000);

  it("builds a typed wheel that installs into a fresh venv with the npm package's version", async () => {
    const dir = mkdtempSync(join(tmpdir(), "atropos-edge-wheel-"));
    const pip = ["-m", "pip", "--disable-pip-version-check", "--no-input"];
    await run(
      python,
      [...pip, "wheel", "--no-deps", "--no-build-isolation", "--retries", "0", "-w", dir, PACKAGE],
      { timeout: 120_000 },
    );
    const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      version: string;
    };
    const wheel = join(dir, `atropos_edge-${version}-py3-none-any.whl`);
    const listing = await run(python, ["-m", "zipfile", "-l", wheel]);
    expect(listing.stdout).toContain("atropos_edge/py.typed");
    expect(listing.stdout).toContain("atropos_edge/trl.py");
    // The core needs nothing but the standard library: a bare venv, no dependencies installed.
    await run("python3", ["-m", "venv", "--without-pip", join(dir, "venv")]);
    const fresh = join(dir, "venv", "bin", "python");
    await run(python, [...pip, "--python", fresh, "install", "--no-index", "--no-deps", wheel], {
      timeout: 120_000,
    });
    const { stdout } = await run(fresh, [
      "-c",
      "import importlib.metadata as m, atropos_edge as a; from atropos_edge import TrainerClient, Batch; print(a.__version__, m.version('atropos-edge'))",
    ]);
    expect(stdout.trim()).toBe(`${version} ${version}`);
  }, 240_000);

  it("against npm run dev: typed errors with request ids, batches() leases and acks", async () => {
    await seed(server.url, "py-pkg", 4);
    const { stdout } = await run(
      python,
      [join(ROOT, "test", "e2e", "python", "package_client.py"), server.url, "py-pkg"],
      { timeout: 90_000 },
    );
    const out = JSON.parse(stdout);
    expect(out.validation).toMatchObject({ status: 422, code: "VALIDATION_FAILED" });
    expect(out.validation.message).toContain("lease_seconds");
    expect(out.validation.request_id).toMatch(/^[0-9a-f]{32}$/); // the id the client sent
    expect(out.conflict).toMatchObject({ status: 409, code: "CONFLICT" });
    expect(out.leased).toEqual([
      { step: 1, sequences: 8, versions: [0], scores: [1, -1, 0.5, -0.5, 1, -1, 0.5, -0.5] },
      { step: 2, sequences: 8, versions: [0], scores: [1, -1, 0.5, -0.5, 1, -1, 0.5, -0.5] },
    ]);
    expect(typeof out.after).toBe("string"); // nothing left: both batches were acked
    const listed = (await (await fetch(`${server.url}/v1/runs/py-pkg/batches`)).json()) as {
      batches: { step: number; status: string }[];
    };
    expect(listed.batches.map((b) => [b.step, b.status])).toEqual([
      [2, "acked"],
      [1, "acked"],
    ]);
  }, 120_000);

  it("TRL's GRPOTrainer trains a tiny random model for 3 steps from 3 leased batches", async () => {
    await seed(server.url, "trl", 6); // 6 groups of 4 = 3 batches of 8
    const out = mkdtempSync(join(tmpdir(), "trl-out-"));
    const { stdout } = await run(
      python,
      [
        join(ROOT, "examples", "python", "trl_grpo_trainer.py"),
        ...["--api", server.url, "--run", "trl", "--steps", "3", "--batch-size", "8"],
        ...["--wait", "30", "--output-dir", out],
      ],
      { timeout: 240_000, env: { ...env, TRL_EXPERIMENTAL_SILENCE: "1" } },
    );
    const lines = stdout.trim().split("\n");
    const before = /^model: \d+ parameters, checksum ([0-9a-f]{16})$/.exec(lines[0] ?? "")?.[1];
    const after = /^done: 3 steps, checksum ([0-9a-f]{16})$/.exec(lines.at(-1) ?? "")?.[1];
    expect(before).toBeDefined();
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
    expect(lines.filter((l) => l.startsWith("leased step"))).toEqual([
      "leased step 1: 8 sequences, mean score 0.0000",
      "leased step 2: 8 sequences, mean score 0.0000",
      "leased step 3: 8 sequences, mean score 0.0000",
    ]);
    const steps = lines.filter((l) => /^step \d/.test(l));
    expect(steps).toHaveLength(3);
    for (const [i, line] of steps.entries()) {
      const m =
        /^step (\d+): loss (\S+), reward (\S+), grad norm (\S+), policy version (\d+)$/.exec(line);
      expect(m, line).not.toBeNull();
      expect(Number(m?.[1])).toBe(i + 1);
      expect(Number.isFinite(Number(m?.[2]))).toBe(true);
      expect(Number(m?.[4])).toBeGreaterThan(0);
      expect(Number(m?.[5])).toBe(i + 1);
    }
    // Each batch acked once, nothing left; the run shows the version announced after step 3.
    const res = await fetch(`${server.url}/v1/runs/trl/batches/lease`, { method: "POST" });
    expect(res.status).toBe(204);
    const listed = (await (await fetch(`${server.url}/v1/runs/trl/batches`)).json()) as {
      batches: { step: number; status: string }[];
    };
    expect(listed.batches.map((b) => [b.step, b.status])).toEqual([
      [3, "acked"],
      [2, "acked"],
      [1, "acked"],
    ]);
    expect(await (await fetch(`${server.url}/v1/runs/trl/policy`)).json()).toEqual({
      policy_version: 3,
    });
  }, 300_000);
});
