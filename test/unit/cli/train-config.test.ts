import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAtroposLayout } from "../../../src/cli/atropos-config";
import { loadConfigFile } from "../../../src/cli/config";
import {
  agentTasksConfig,
  isTrainLayout,
  judgeEndpoints,
  parseTrainConfig,
  readTasks,
  trainPlanLines,
} from "../../../src/cli/train-config";

const EXAMPLE = join(import.meta.dirname, "../../../examples/agent-tasks/atropos_config.yaml");

describe("train config", () => {
  it("is recognised by its top-level keys, through the CLI's config loader", () => {
    const file = loadConfigFile(EXAMPLE);
    expect(isTrainLayout(file)).toBe(true);
    expect(isAtroposLayout(file)).toBe(false);
    expect(isTrainLayout({ env: { group_size: 4 }, openai: {} })).toBe(false);
    expect(isTrainLayout({ steps: 3 })).toBe(false);
  });

  it("reads the example: tasks, judges on the default endpoint, the env config", () => {
    const config = parseTrainConfig(loadConfigFile(EXAMPLE), EXAMPLE);
    const tasks = readTasks(config, EXAMPLE);
    expect(tasks.length).toBe(5);
    const judges = judgeEndpoints(config, "http://sim/v1");
    expect(judges.map((j) => [j.name, j.model_name, j.base_url, j.server_type])).toEqual([
      ["judge-a", "judge-a", "http://sim/v1", "openai"],
      ["judge-b", "judge-b", "http://sim/v1", "openai"],
      ["judge-strict", "judge-strict", "http://sim/v1", "openai"],
    ]);
    const env = agentTasksConfig(config, tasks, judges, {});
    expect(env).toMatchObject({
      max_steps_per_trajectory: 6,
      max_num_workers: 4,
      group_size: 4,
      n_judges: 3,
      judge_mode: "pointwise",
      order: "easy_first",
    });
    expect(trainPlanLines(config).join("\n")).toContain("gradient updates are the trainer's job");
  });

  it("takes the book's single judge model and endpoints of their own", () => {
    const config = parseTrainConfig(
      {
        judge: {
          model: "gpt-4o",
          n_judges: 3,
          base_url: "https://judges.example/v1",
          api_key: "k",
        },
        tasks: { task_file: "t.jsonl" },
      },
      "c.yaml",
    );
    expect(judgeEndpoints(config, null)).toEqual([
      {
        name: "gpt-4o",
        model_name: "gpt-4o",
        base_url: "https://judges.example/v1",
        server_type: "openai",
        api_key: "k",
      },
    ]);
  });

  it("refuses judges without an endpoint when the policy is a real server", () => {
    const config = parseTrainConfig(
      { judge: { models: ["judge-a"] }, tasks: { task_file: "t.jsonl" } },
      "c.yaml",
    );
    expect(() => judgeEndpoints(config, null)).toThrow(
      /judge\.models\[0\] \(judge-a\) has no base_url: with inference\.url set, judges run on endpoints of their own/,
    );
  });

  it("names every field to fix", () => {
    expect(() =>
      parseTrainConfig(
        {
          training: { max_steps: 0, batch_size: 8, epochs: 3 },
          trajectory_collection: { n_workers: "four" },
        },
        "c.yaml",
      ),
    ).toThrow(
      [
        "c.yaml: invalid train config:",
        "  training.max_steps: Too small: expected number to be >0",
        '  training: Unrecognized key: "epochs"',
        "  trajectory_collection.n_workers: Invalid input: expected number, received string",
        "  tasks: Invalid input: expected object, received undefined",
      ].join("\n"),
    );
    expect(() => parseTrainConfig({ env: {} }, "c.yaml")).toThrow(/not a train config/);
  });

  it("says which tasks file it cannot read", () => {
    const config = parseTrainConfig({ tasks: { task_file: "missing.jsonl" } }, "/x/c.yaml");
    expect(() => readTasks(config, "/x/c.yaml")).toThrow(
      /tasks\.task_file: cannot read \/x\/missing\.jsonl/,
    );
    expect(readFileSync(EXAMPLE, "utf8")).toContain("task_file: tasks.jsonl");
  });
});
