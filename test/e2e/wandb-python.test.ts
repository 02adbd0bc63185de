/**
 * The W&B stand-in (test/fixtures/wandb-stand-in.ts), which the W&B client's tests rely on, is
 * itself checked against the real Python `wandb` package from the package mirror: a run logged
 * by wandb.init/log/finish (WANDB_BASE_URL at the stand-in, WANDB_MODE online, a fake key)
 * passes every shape check, and the stand-in records what the client sent.
 *
 * The mirror lacks opentelemetry-semantic-conventions, which wandb imports for its own telemetry
 * only; a stand-in module (python/otel_semconv_stand_in) takes its place in the venv.
 */
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WandbRun } from "../../src/cli/wandb-client";
import { startWandbStandIn, type WandbStandIn } from "../fixtures/wandb-stand-in";
import { ROOT } from "./harness";
import { wandbVenv } from "./wandb-venv";

const run = promisify(execFile);
describe("W&B stand-in against the real wandb package", () => {
  let venv: string;
  let standIn: WandbStandIn;

  beforeAll(async () => {
    venv = await wandbVenv();
    standIn = await startWandbStandIn();
  }, 300_000);

  afterAll(async () => {
    await standIn?.close();
  });

  it("accepts a run logged by wandb.init/log/finish, with its group, config, history and completion", async () => {
    const workDir = mkdtempSync(join(tmpdir(), "wandb-run-"));
    const { stdout } = await run(
      join(venv, "bin", "python"),
      [join(ROOT, "test", "e2e", "python", "wandb_run.py")],
      {
        cwd: workDir,
        timeout: 120_000,
        env: {
          ...process.env,
          HOME: workDir,
          WANDB_BASE_URL: standIn.url,
          WANDB_MODE: "online",
          WANDB_API_KEY: "f".repeat(40),
          WANDB_DIR: workDir,
          WANDB_SILENT: "true",
        },
      },
    );
    const { run_id } = JSON.parse(stdout.trim().split("\n").at(-1)!) as { run_id: string };
    expect(standIn.violations).toEqual([]);
    expect(standIn.operations).toContain("UpsertBucket");
    expect(standIn.operations).toContain("CreateRunFiles");
    const logged = standIn.runs.get(`proj/${run_id}`)!;
    expect(logged).toMatchObject({
      entity: "stand-in-entity",
      group: "grp",
      displayName: "gsm8k_0-2026-11-25-abcdef",
      config: { group_size: { value: 8 }, tokenizer_name: { value: "qwen3" } },
      complete: true,
      exitcode: 0,
    });
    expect(logged.history.map((h) => h._step)).toEqual([1, 2]);
    expect(logged.history[1]).toMatchObject({
      "gsm8k_0_train/percent_correct": 0.5,
      "gsm8k_0_eval/pass@1": 0.4,
    });
    expect(logged.summary).toMatchObject({ "gsm8k_0_train/percent_correct": 0.5 });
    // Run files: uploaded through CreateRunFiles' URLs, then listed in the stream.
    expect(logged.uploaded).toContain("wandb-summary.json");
    expect([...standIn.files.keys()]).toContain("wandb-summary.json");

    // The project's client, against the same checks, logs the same shapes.
    const ours = new WandbRun({
      baseUrl: standIn.url,
      apiKey: "f".repeat(40),
      project: "proj",
      group: "grp",
      runId: "ours1234",
      displayName: "gsm8k_0-2026-11-25-ghijkl",
      config: { group_size: 8, tokenizer_name: "qwen3" },
    });
    await ours.start();
    ours.log({ "gsm8k_0_train/percent_correct": 0.25 }, 1);
    ours.log({ "gsm8k_0_train/percent_correct": 0.5, "gsm8k_0_eval/pass@1": 0.4 }, 2);
    await ours.finish();
    expect(standIn.violations).toEqual([]);
    const mine = standIn.runs.get("proj/ours1234")!;
    const strip = (h: Record<string, unknown>) =>
      Object.fromEntries(
        Object.entries(h).filter(([k]) => !["_runtime", "_timestamp"].includes(k)),
      );
    expect(mine.history.map(strip)).toEqual(logged.history.map(strip));
    expect(mine.group).toBe(logged.group);
    expect(mine.config.group_size).toEqual(logged.config.group_size);
    expect(mine).toMatchObject({ complete: true, exitcode: 0 });
  }, 180_000);
});
