/**
 * The W&B run-protocol client and the run → W&B sync, against the local W&B stand-in (which
 * checks request shapes) and a canned rollout API on loopback; and the JSONL metrics export.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { exportMetrics } from "../../../src/cli/metrics-command";
import { WandbRun } from "../../../src/cli/wandb-client";
import { WandbSync } from "../../../src/cli/wandb-sync";
import { cannedApi as startCannedApi } from "../../fixtures/canned-metrics-api";
import { startWandbStandIn } from "../../fixtures/wandb-stand-in";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function standIn() {
  const s = await startWandbStandIn();
  closers.push(s.close);
  return s;
}

describe("WandbRun", () => {
  it("creates the run with its group and config, streams history at offsets, uploads a table, completes", async () => {
    const wandb = await standIn();
    const run = new WandbRun({
      baseUrl: wandb.url,
      apiKey: "fake-key",
      project: "proj",
      group: "grp",
      runId: "abc123",
      displayName: "gsm8k_0-2026-11-25-qwerty",
      config: { group_size: 8, tokenizer_name: "qwen3" },
    });
    await run.start();
    run.log({ "gsm8k_0_train/percent_correct": 0.25 }, 1);
    run.log({ "gsm8k_0_train/percent_correct": 0.5 }, 2);
    await run.flush();
    const table = await run.table("gsm8k_0_train/rollouts", 3, ["text", "score"], [["hi", 1]]);
    run.log({ "gsm8k_0_train/percent_correct": 0.75, "gsm8k_0_train/rollouts": table }, 3);
    await run.finish();

    expect(wandb.violations).toEqual([]);
    expect(wandb.operations).toEqual(["UpsertBucket", "CreateRunFiles"]);
    const stored = wandb.runs.get("proj/abc123")!;
    expect(stored).toMatchObject({
      entity: "stand-in-entity",
      group: "grp",
      displayName: "gsm8k_0-2026-11-25-qwerty",
      config: { group_size: { value: 8 }, tokenizer_name: { value: "qwen3" } },
      complete: true,
      exitcode: 0,
    });
    expect(stored.history.map((h) => h._step)).toEqual([1, 2, 3]);
    expect(stored.history[2]!["gsm8k_0_train/rollouts"]).toMatchObject({
      _type: "table-file",
      ncols: 2,
      nrows: 1,
    });
    expect(stored.summary).toMatchObject({ "gsm8k_0_train/percent_correct": 0.75, _step: 3 });
    const path = (table as { path: string }).path;
    expect(path).toMatch(/^media\/table\/gsm8k_0_train_rollouts_3_[0-9a-f]{20}\.table\.json$/);
    expect(stored.uploaded).toEqual([path]);
    expect(JSON.parse(wandb.files.get(path)!)).toEqual({
      columns: ["text", "score"],
      data: [["hi", 1]],
    });
  });

  it("keeps unsent lines when the stream fails, and sends them at the same offset later", async () => {
    const wandb = await standIn();
    let failNext = false;
    const flaky: typeof fetch = async (input, init) => {
      if (failNext && String(input).endsWith("/file_stream")) {
        failNext = false;
        return new Response("down", { status: 503 });
      }
      return fetch(input, init);
    };
    const run = new WandbRun({
      baseUrl: wandb.url,
      apiKey: "k",
      project: "p",
      runId: "r",
      displayName: "r",
      fetch: flaky,
    });
    await run.start();
    run.log({ x: 1 }, 0);
    failNext = true;
    await expect(run.flush()).rejects.toThrow("HTTP 503");
    run.log({ x: 2 }, 1);
    await run.flush();
    expect(wandb.violations).toEqual([]);
    expect(wandb.runs.get("p/r")!.history.map((h) => h.x)).toEqual([1, 2]);
  });
});

/** A rollout API with two envs, metrics for steps 0–4 and one group each. */
async function cannedApi(step: number): Promise<string> {
  const api = await startCannedApi(step);
  closers.push(api.close);
  return api.url;
}

describe("WandbSync", () => {
  it("logs one W&B run per env as Atropos does: project and group from /register, prefixed keys, rollouts", async () => {
    const wandb = await standIn();
    const api = await cannedApi(5);
    const sync = new WandbSync({
      api,
      run: "default",
      wandb: { baseUrl: wandb.url, apiKey: "fake" },
      now: () => Date.UTC(2026, 10, 25),
    });
    // Step 5, settled 2 steps behind: steps up to 3 are logged now.
    expect(await sync.sync()).toBe(2 * (4 + 1));
    const runs = [...wandb.runs.values()];
    expect(runs).toHaveLength(2);
    const math = runs.find((r) => r.displayName?.startsWith("math_0-"))!;
    expect(math.displayName).toMatch(/^math_0-2026-11-25-[a-z]{6}$/);
    expect(math).toMatchObject({ project: "proj", group: "grp" });
    expect(math.history.map((h) => h._step)).toEqual([0, 1, 2, 3, 3]);
    expect(math.history[1]).toMatchObject({ "math_0_train/score_mean": 0.5 });
    expect(math.history[0]).toMatchObject({ "math_0_eval/pass@1": 0.1 });
    expect(math.history[4]!["math_0_train/rollouts"]).toMatchObject({
      _type: "table-file",
      nrows: 1,
    });
    const tablePath = (math.history[4]!["math_0_train/rollouts"] as { path: string }).path;
    expect(JSON.parse(wandb.files.get(tablePath)!).data).toEqual([["Hello", 0.75]]);

    await sync.finish();
    expect(math.history.map((h) => h._step)).toEqual([0, 1, 2, 3, 3, 4]);
    expect(math.history[5]).toMatchObject({
      "math_0_train/score_mean": 0.8,
      "math_0_eval/pass@1": 0.4,
    });
    expect(runs.every((r) => r.complete && r.exitcode === 0)).toBe(true);
    expect(wandb.violations).toEqual([]);
  });
});

describe("metrics export", () => {
  it("writes one JSONL record per value, by step", async () => {
    const api = await cannedApi(5);
    const out = join(mkdtempSync(join(tmpdir(), "metrics-")), "m.jsonl");
    const lines: string[] = [];
    expect(await exportMetrics({ api, run: "default", out }, (l) => lines.push(l))).toBe(0);
    const records = readFileSync(out, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(records).toHaveLength(12);
    expect(records[0]).toEqual({
      step: 0,
      policy_version: 0,
      env_id: 0,
      kind: "eval",
      name: "eval/pass@1",
      value: 0.1,
    });
    expect(records.map((r) => r.step)).toEqual(
      [...records.map((r) => r.step)].sort((a, b) => a - b),
    );
    expect(lines[0]).toContain(`12 values of run default → ${out}`);
  });
});
