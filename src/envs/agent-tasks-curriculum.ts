/**
 * agent_tasks' task rules, free of the env: which tasks a config may serve (tools offered, a test
 * runner for the language, judges for a rubric), and the adaptive curriculum's state (the level
 * served, the window of group means that moves it up) with its checkpoint.
 */
import { difficultyLevels, type JsonObject, type Task } from "../sdk/env";
import type { AgentTasksConfig, AgentTasksDeps } from "./agent-tasks-config";

/** Throws, naming the task, when a task cannot be served with this config and these deps. */
export function checkServable(tasks: Task[], config: AgentTasksConfig, deps: AgentTasksDeps): void {
  for (const task of tasks) {
    const missing = task.required_tools.filter((t) => !config.tools.includes(t));
    if (missing.length > 0) {
      throw new Error(
        `agent_tasks: task "${task.id}" requires ${missing.join(", ")}, not among the tools offered (${config.tools.join(", ") || "none"})`,
      );
    }
    if (
      task.evaluation.kind === "hidden_tests" &&
      task.evaluation.language !== "python" &&
      !deps.runTests
    ) {
      throw new Error(
        `agent_tasks: task "${task.id}" has hidden tests in ${task.evaluation.language}; the sandbox runs Python tests (wire another runner with createAgentTasksEnv({ runTests }))`,
      );
    }
    if (task.evaluation.kind === "judge" && config.judges.length === 0 && !deps.judges) {
      throw new Error(
        `agent_tasks: task "${task.id}" is judged by a rubric but no judges are configured (judges: […])`,
      );
    }
  }
}

type CurriculumConfig = Pick<
  AgentTasksConfig,
  "curriculum" | "advance_window" | "advance_threshold"
>;

/** Which tasks are served, in order; with `curriculum: adaptive`, only up to the level reached. */
export class Curriculum {
  private readonly levels: number[];
  private next = 0;
  private levelNow: number;
  private window: number[] = [];

  constructor(
    private readonly tasks: Task[],
    private readonly config: CurriculumConfig,
  ) {
    this.levels = difficultyLevels(tasks);
    this.levelNow = this.levels[0]!;
  }

  /** The current curriculum level (the highest difficulty served). */
  get level(): number {
    return this.levelNow;
  }

  served(): Task[] {
    if (this.config.curriculum !== "adaptive") return this.tasks;
    return this.tasks.filter((t) => t.difficulty <= this.levelNow);
  }

  /** The next task, round robin over those served. */
  nextTask(): Task {
    const pool = this.served();
    return pool[this.next++ % pool.length]!;
  }

  /** A window of group means at the current level decides when to move up. */
  record(task: Task, scores: number[]): void {
    if (
      this.config.curriculum !== "adaptive" ||
      task.difficulty !== this.levelNow ||
      scores.length === 0
    )
      return;
    this.window.push(scores.reduce((a, b) => a + b, 0) / scores.length);
    if (this.window.length > this.config.advance_window) this.window.shift();
    const mean = this.window.reduce((a, b) => a + b, 0) / this.window.length;
    const higher = this.levels.find((l) => l > this.levelNow);
    if (
      this.window.length === this.config.advance_window &&
      mean >= this.config.advance_threshold &&
      higher !== undefined
    ) {
      this.levelNow = higher;
      this.window = [];
    }
  }

  checkpoint(): JsonObject {
    return { next: this.next, level: this.levelNow, window: this.window };
  }

  restore(state: JsonObject): void {
    this.next = Number(state.next ?? 0);
    if (typeof state.level === "number" && this.levels.includes(state.level))
      this.levelNow = state.level;
    this.window = Array.isArray(state.window) ? state.window.map(Number) : [];
  }
}
