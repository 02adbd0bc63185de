/**
 * examples/python/grpo_torch_trainer.py: a PyTorch (CPU) GRPO trainer on the atropos_edge package
 * leasing real batches from `npm run dev`, stepping a tiny random causal LM and acking. PyTorch
 * comes from python/install_dev_venv.sh (the venv of the Python package's tests, cached under
 * node_modules/.cache and reused).
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, makeGroup, postJson, ROOT, seedRun, startDevServer } from "./harness";

const run = promisify(execFile);
const examples = join(ROOT, "examples", "python");
const installVenv = join(ROOT, "python", "install_dev_venv.sh");

describe("examples/python/grpo_torch_trainer.py (PyTorch, CPU)", () => {
  let server: DevServer;
  let python: string;
  beforeAll(async () => {
    const [install, dev] = await Promise.all([
      // First run: about a minute and ~1.5 GB from the local pip mirror; later runs reuse it.
      run("bash", [installVenv], { timeout: 600_000 }),
      startDevServer(),
    ]);
    python = install.stdout.trim().split("\n").at(-1) ?? "";
    server = dev;
  }, 660_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("leases 3 batches, takes 3 finite GRPO steps that change the weights, acks all", async () => {
    // 5 groups of 4 from the harness (varied scores) plus one whose env sent per-token
    // advantages: 24 sequences = 3 batches of 8.
    const { base, envIds } = await seedRun(server.url, { run: "torch", groups: 5 });
    const withAdvantages = makeGroup(99, 4, envIds[0] ?? 0);
    const sent = await postJson(`${base}/scored_data`, {
      ...withAdvantages,
      advantages: withAdvantages.tokens.map((seq, s) => seq.map(() => (s % 2 ? 0.5 : -0.5))),
    });
    expect(sent.status).toBe(200);

    const started = Date.now();
    const { stdout } = await run(
      python,
      [join(examples, "grpo_torch_trainer.py"), "--api", server.url, "--steps", "3"].concat([
        "--run",
        "torch",
        "--batch-size",
        "8",
        "--wait",
        "30",
      ]),
      { timeout: 120_000 },
    );
    expect(Date.now() - started).toBeLessThan(120_000);
    const lines = stdout.trim().split("\n");
    const before = /^model: \d+ parameters, checksum ([0-9a-f]{16})$/.exec(lines[0] ?? "")?.[1];
    const after = /^done: 3 steps, checksum ([0-9a-f]{16})$/.exec(lines.at(-1) ?? "")?.[1];
    expect(before).toBeDefined();
    expect(after).toBeDefined();
    expect(after).not.toBe(before);

    const steps = lines.slice(1, -1).map((line) => {
      const m =
        /^step (\d+): 8 sequences, (\d+) trainable tokens, (\d) groups with env advantages, mean score (\S+), loss (\S+), grad norm (\S+), logp margin (\S+) -> (\S+), max staleness (\d+)$/.exec(
          line,
        );
      expect(m, line).not.toBeNull();
      return {
        step: Number(m?.[1]),
        trainable: Number(m?.[2]),
        envAdvantages: Number(m?.[3]),
        meanScore: Number(m?.[4]),
        loss: Number(m?.[5]),
        gradNorm: Number(m?.[6]),
        marginBefore: Number(m?.[7]),
        marginAfter: Number(m?.[8]),
        staleness: Number(m?.[9]),
      };
    });
    expect(steps.map((s) => s.step)).toEqual([1, 2, 3]);
    // Half of each 8-token sequence is prompt (-100); labels are masks[1:]: 4 per sequence.
    expect(steps.every((s) => s.trainable === 32)).toBe(true);
    expect(steps.every((s) => Number.isFinite(s.loss) && s.gradNorm > 0)).toBe(true);
    // Each step makes its batch's positive-advantage tokens likelier relative to the negative
    // ones (a sign error in the loss lowers this margin instead).
    expect(steps.every((s) => s.marginAfter > s.marginBefore)).toBe(true);
    expect(steps.reduce((n, s) => n + s.envAdvantages, 0)).toBe(1);
    // harness groups score ((seed + s) % 3) - 1: every batch's mean lies in [-1, 1].
    expect(steps.every((s) => Math.abs(s.meanScore) <= 1)).toBe(true);
    // All groups were sampled under policy 0; each step announced one more version.
    expect(steps.map((s) => s.staleness)).toEqual([0, 1, 2]);

    // All three acked: nothing is left to lease, and the run shows the trainer's version.
    const res = await fetch(`${server.url}/v1/runs/torch/batches/lease`, { method: "POST" });
    expect(res.status).toBe(204);
    const listed = (await (await fetch(`${server.url}/v1/runs/torch/batches`)).json()) as {
      batches: { step: number; status: string; num_seqs: number }[];
    };
    expect(listed.batches.map((b) => [b.step, b.status, b.num_seqs])).toEqual([
      [3, "acked", 8],
      [2, "acked", 8],
      [1, "acked", 8],
    ]);
    const policy = await (await fetch(`${server.url}/v1/runs/torch/policy`)).json();
    expect(policy).toEqual({ policy_version: 3 });
  });
});
