/** agent_tasks' curriculum and task checks, without an env: pure state and rules. */
import { describe, expect, it } from "vitest";
import { AgentTasksConfigSchema } from "../../../src/envs/agent-tasks-config";
import { Curriculum, checkServable } from "../../../src/envs/agent-tasks-curriculum";
import type { Task } from "../../../src/sdk/env";

const task = (id: string, difficulty: number, extra: Partial<Task> = {}): Task => ({
  id,
  task_type: "math",
  difficulty,
  required_tools: [],
  prompt: `solve ${id}`,
  evaluation: { kind: "reference", answer: "1", match: "exact" },
  ...extra,
});
const TASKS = [task("a", 1), task("b", 1), task("c", 3)];
const adaptive = { curriculum: "adaptive" as const, advance_window: 2, advance_threshold: 0.7 };

describe("agent_tasks curriculum", () => {
  it("serves only the lowest level until a full window at that level averages the threshold", () => {
    const c = new Curriculum(TASKS, adaptive);
    expect(c.level).toBe(1);
    expect([c.nextTask().id, c.nextTask().id, c.nextTask().id]).toEqual(["a", "b", "a"]);
    c.record(TASKS[0]!, [1, 0]); // mean 0.5
    c.record(TASKS[2]!, [1, 1]); // another level: not counted
    expect(c.level).toBe(1);
    c.record(TASKS[1]!, [1, 1]); // window [0.5, 1]: mean 0.75 ≥ 0.7
    expect(c.level).toBe(3);
    expect(c.served().map((t) => t.id)).toEqual(["a", "b", "c"]);
  });

  it("serves every task without the adaptive curriculum, and restores only a known level", () => {
    expect(new Curriculum(TASKS, { ...adaptive, curriculum: "none" }).served()).toHaveLength(3);
    const c = new Curriculum(TASKS, adaptive);
    c.restore({ next: 1, level: 2, window: [0.9] });
    expect(c.level).toBe(1);
    expect(c.checkpoint()).toEqual({ next: 1, level: 1, window: [0.9] });
    c.restore({ next: 0, level: 3, window: [] });
    expect(c.level).toBe(3);
  });

  it("refuses a task whose tools are not offered, naming the task", () => {
    const config = AgentTasksConfigSchema.parse({ tasks: [], tools: ["calculator"] });
    const needsKv = task("kv", 1, { required_tools: ["kv_get"] });
    expect(() => checkServable([needsKv], config, {})).toThrow(/task "kv" requires kv_get/);
    expect(() => checkServable([task("ok", 1)], config, {})).not.toThrow();
  });
});
