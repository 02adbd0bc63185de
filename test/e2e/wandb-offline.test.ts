/**
 * W&B offline: `WANDB_MODE=offline atropos-edge wandb --once` (no API key) writes one run
 * directory per env, and the real `wandb sync` (the wandb package from the pip mirror) uploads
 * them later to the project's W&B-protocol stand-in, which checks every request's shape. What
 * arrives is what the online sink sends: project, group, config, history by step, the rollouts
 * table as a run file, the summary, and a finished run.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cannedApi } from "../fixtures/canned-metrics-api";
import { startWandbStandIn, type WandbStandIn } from "../fixtures/wandb-stand-in";
import { ROOT } from "./harness";
import { wandbVenv } from "./wandb-venv";

const run = promisify(execFile);

describe("W&B offline run directories, uploaded by the real `wandb sync`", () => {
  let venv: string;
  let standIn: WandbStandIn;
  let api: { url: string; close: () => Promise<void> };
  const work = mkdtempSync(join(tmpdir(), "wandb-offline-"));

  beforeAll(async () => {
    venv = await wandbVenv();
    standIn = await startWandbStandIn();
    api = await cannedApi(5);
  }, 300_000);
  afterAll(async () => {
    await Promise.all([standIn?.close(), api?.close()]);
    rmSync(work, { recursive: true, force: true });
  });

  it("writes a run directory per env without a key, and wandb sync delivers what the online sink would", async () => {
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("WANDB_")),
    ) as NodeJS.ProcessEnv;
    const cli = await run(
      process.execPath,
      [join(ROOT, "bin", "atropos-edge.mjs"), "wandb", "--api", api.url, "--once"],
      { cwd: work, env: { ...env, WANDB_MODE: "offline", WANDB_DIR: work }, timeout: 60_000 },
    );
    const dirs = [...cli.stdout.matchAll(/W&B offline run: (\S+)/g)].map((m) => m[1]!);
    expect(dirs, cli.stdout).toHaveLength(2);
    for (const dir of dirs) {
      expect(dir.startsWith(join(work, "wandb", "offline-run-"))).toBe(true);
      await run(join(venv, "bin", "python"), ["-W", "ignore", "-m", "wandb", "sync", dir], {
        cwd: work,
        timeout: 120_000,
        env: {
          ...env,
          HOME: work,
          WANDB_BASE_URL: standIn.url,
          WANDB_API_KEY: "f".repeat(40),
          WANDB_SILENT: "true",
        },
      });
    }
    expect(standIn.violations).toEqual([]);
    const runs = [...standIn.runs.values()];
    expect(runs).toHaveLength(2);
    const math = runs.find((r) => r.displayName?.startsWith("math_0-"))!;
    expect(math.displayName).toMatch(/^math_0-\d{4}-\d{2}-\d{2}-[a-z]{6}$/);
    expect(math).toMatchObject({
      project: "proj",
      group: "grp",
      complete: true,
      exitcode: 0,
      config: { run: { value: "default" }, env_id: { value: 0 }, wandb_name: { value: "math_0" } },
    });
    expect(math.history.map((h) => h._step)).toEqual([0, 1, 2, 3, 4, 4]);
    expect(math.history[1]).toMatchObject({ "math_0_train/score_mean": 0.5 });
    expect(math.history[4]).toMatchObject({
      "math_0_train/score_mean": 0.8,
      "math_0_eval/pass@1": 0.4,
    });
    const table = math.history[5]!["math_0_train/rollouts"] as { path: string; _type: string };
    expect(table._type).toBe("table-file");
    expect(math.uploaded).toContain(table.path);
    expect(JSON.parse(standIn.files.get(table.path)!).data).toEqual([["Hello", 0.75]]);
    expect(math.summary).toMatchObject({ "math_0_train/score_mean": 0.8, _step: 4 });
  }, 300_000);
});
