/**
 * The book's local training recipe (chapter 10.5.3) as written: its atropos_config.yaml unchanged
 * (test/fixtures/book/, with a my_tasks.json of our own since the book gives none), run as
 * `atropos-edge train --config atropos_config.yaml --output ./my_hermes_ft`, only the step count
 * and the port lowered/moved on the command line. The agent_tasks env gets python_exec,
 * web_search (offline BM25) and file_ops, three gpt-4o judges on the simulator, and the demo
 * trainer; the output directory gets every file docs/JUDGES.md lists.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, ROOT, runCli } from "./harness";

const BOOK = join(ROOT, "test/fixtures/book");

const jsonl = (path: string) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));

describe("the book's recipe: atropos-edge train --config atropos_config.yaml --output ./my_hermes_ft", () => {
  const dir = mkdtempSync(join(tmpdir(), "book-recipe-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("runs the chapter's YAML unchanged and writes the run's outputs", async () => {
    for (const f of ["atropos_config.yaml", "my_tasks.json"])
      copyFileSync(join(BOOK, f), join(dir, f));
    const port = await freePort();
    const { code, output } = await runCli(
      [
        "train",
        "--config",
        "atropos_config.yaml",
        "--output",
        "./my_hermes_ft",
        "--steps",
        "2",
        "--port",
        String(port),
        "--max-seconds",
        "200",
      ],
      { cwd: dir, boundMs: 270_000 },
    );
    expect(code, output.slice(-4000)).toBe(0);
    // Fields the edge does not use: accepted, one line each saying why.
    expect(output).toContain(
      "model.base_model (NousResearch/Hermes-4-405B): not loaded: the policy is the inference simulator",
    );
    expect(output).toContain(
      "model.quantization (q4_k_m): atropos-edge loads no weights; quantization is the inference server's setting",
    );
    expect(output).toContain("training.learning_rate (0.00001): the demo trainer's toy policy");
    expect(output).toMatch(/tasks: 4 from \.\/my_tasks\.json; judges: gpt-4o \(gpt-4o at /);

    const out = join(dir, "my_hermes_ft");
    const trajectories = jsonl(join(out, "trajectories.jsonl"));
    expect(trajectories.length).toBeGreaterThan(0);
    const steps = trajectories.flatMap((t) => t.steps);
    const search = steps.find((s) => s.tool_call?.name === "web_search");
    expect(search, "a web_search call in the exported trajectories").toBeDefined();
    expect(search.tool_call.error).toBeNull();
    expect(search.tool_call.result).toMatch(/^1\. .+ \(https:\/\/corpus\.atropos-edge\.local\//);

    const metrics = jsonl(join(out, "metrics.jsonl"));
    expect(metrics.length).toBeGreaterThan(0);
    expect(Object.keys(metrics[0]).sort()).toEqual(
      ["env_id", "kind", "name", "policy_version", "step", "value"].sort(),
    );

    const summary = JSON.parse(readFileSync(join(out, "run_summary.json"), "utf8"));
    expect(summary.envs.agent_tasks.steps.length).toBe(2);
    expect(summary.policy_versions.announced).toBe(2);

    const calibration = JSON.parse(readFileSync(join(out, "judge_calibration.json"), "utf8"));
    expect(calibration).toEqual({ version: 1, judges: {} });

    const weights = JSON.parse(readFileSync(join(out, "policy_weights.json"), "utf8"));
    expect(weights.format).toBe("atropos-edge-toy-policy/1");
    expect(Object.keys(weights.weights).length).toBeGreaterThan(0);
  }, 300_000);
});
