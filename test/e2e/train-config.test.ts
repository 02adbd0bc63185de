/**
 * `atropos-edge train --config atropos_config.yaml` against fresh state: the book's layout, the
 * agent_tasks env on the simulator, a three-judge panel (one failing on purpose: nothing listens
 * at its endpoint), calibration fitted before training, and a trainer command that registers,
 * leases batches, finds the judges' report and a hidden-test task scored in the CLI's local
 * sandbox in its groups, and acks them.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, ROOT, runCli } from "./harness";

/** A minimal trainer: register, lease until a judged and a hidden-test group arrive, print them, ack. */
const TRAINER = `
const api = process.env.ATROPOS_EDGE_API_URL;
const call = async (method, path, body) => {
  const res = await fetch(api + path, { method, headers: { "content-type": "application/json" }, body: body && JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};
await call("POST", "/register", { wandb_group: "t", wandb_project: "t", batch_size: Number(process.env.ATROPOS_EDGE_BATCH_SIZE), max_token_len: 2048, checkpoint_dir: "c", save_checkpoint_interval: 0, starting_step: 0, num_steps: 2 });
let judged = false;
let tested = false;
for (let i = 0; i < 400; i++) {
  const leased = await call("POST", "/v1/runs/default/batches/lease", { lease_seconds: 60 });
  if (leased.status === 200) {
    await call("POST", "/v1/runs/default/batches/" + leased.body.batch_id + "/ack", { lease_id: leased.body.lease_id });
    for (const g of leased.body.batch) {
      if (g.group_overrides?.judge && !judged) {
        judged = true;
        console.log("JUDGE_REPORT " + JSON.stringify(g.group_overrides.judge));
      }
      if (g.group_overrides?.task_id === "fizzbuzz" && !tested) {
        tested = true;
        console.log("HIDDEN_TESTS " + JSON.stringify({ scores: g.scores, messages: g.messages.map((m) => m.at(-1).content) }));
      }
    }
    if (judged && tested) process.exit(0);
  }
  await new Promise((r) => setTimeout(r, 250));
}
console.log("no judged and hidden-test groups arrived");
process.exit(3);
`;

describe("atropos-edge train --config", () => {
  const dir = mkdtempSync(join(tmpdir(), "train-config-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("runs collection, a three-judge panel with calibration and the trainer command, then exits 0", async () => {
    const tasks = readFileSync(join(ROOT, "examples/agent-tasks/tasks.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.includes('"kind": "judge"') || l.includes('"kind": "hidden_tests"'));
    writeFileSync(join(dir, "tasks.jsonl"), `${tasks.join("\n")}\n`);
    copyFileSync(join(ROOT, "examples/agent-tasks/labels.jsonl"), join(dir, "labels.jsonl"));
    writeFileSync(join(dir, "trainer.mjs"), TRAINER);
    const port = await freePort();
    writeFileSync(
      join(dir, "atropos_config.yaml"),
      `model:
  base_model: some/model
training:
  max_steps: 2
  batch_size: 8
  trainer:
    command: node trainer.mjs
trajectory_collection:
  n_workers: 2
  max_steps_per_trajectory: 3
  tools: [calculator]
  group_size: 4
judge:
  models:
    - judge-a
    - judge-strict
    - { name: judge-broken, base_url: "http://127.0.0.1:9/v1" }
  n_judges: 3
  min_judges: 2
  calibration: { labels: labels.jsonl, file: calibration.json }
tasks:
  task_file: tasks.jsonl
api:
  port: ${port}
`,
    );
    const { code, output } = await runCli(
      ["train", "--config", "atropos_config.yaml", "--max-seconds", "90"],
      { cwd: dir, boundMs: 150_000 },
    );
    expect(output).toContain(
      "gradient updates are the trainer's job (your command: node trainer.mjs)",
    );
    expect(output).toContain(
      "model.base_model (some/model): not loaded: the policy is the inference simulator",
    );
    expect(output).toMatch(/calibration judge-strict: accepted \(held-out MAE/);
    expect(output).toMatch(/calibration judge-broken: not fitted/);
    const stored = JSON.parse(readFileSync(join(dir, "calibration.json"), "utf8"));
    expect(stored.judges["judge-strict"].accepted).toBe(true);
    const line = output.split("\n").find((l) => l.startsWith("JUDGE_REPORT "));
    expect(line, output.slice(-3000)).toBeDefined();
    const report = JSON.parse(line!.slice("JUDGE_REPORT ".length));
    expect(report.judges).toEqual(["judge-a", "judge-strict", "judge-broken"]);
    expect(report.scores[2]).toEqual([null, null, null, null]);
    expect(
      report.failures.filter((f: { judge: string }) => f.judge === "judge-broken"),
    ).toHaveLength(4);
    expect(report.calibrated).toEqual(expect.arrayContaining(["judge-a", "judge-strict"]));
    // The hidden-test task ran in the CLI's local sandbox: the known solution passes every test.
    const hidden = output.split("\n").find((l) => l.startsWith("HIDDEN_TESTS "));
    expect(hidden, output.slice(-3000)).toBeDefined();
    const { scores, messages } = JSON.parse(hidden!.slice("HIDDEN_TESTS ".length));
    (messages as string[]).forEach((m, i) => {
      expect(scores[i]).toBe(m.includes("def fizzbuzz") ? 1 : 0);
    });
    expect(output).toContain("trainer command exited with code 0");
    expect(code).toBe(0);
  }, 180_000);

  it("rejects a config with a bad tasks file before starting anything", async () => {
    writeFileSync(join(dir, "bad.jsonl"), '{"task_type": "x", "difficulty": 0, "prompt": "p"}\n');
    writeFileSync(join(dir, "bad.yaml"), "tasks:\n  task_file: bad.jsonl\n");
    const { code, output } = await runCli(["train", "--config", "bad.yaml"], {
      cwd: dir,
      boundMs: 30_000,
    });
    expect(code).toBe(1);
    expect(output).toMatch(/bad\.jsonl:1 task 1: difficulty: .*; evaluation: /);
    expect(output).not.toContain("starting the dev server");
  }, 40_000);
});
