/**
 * agent_tasks: a generic agent env driven by a tasks file. Each task names its type, difficulty
 * (1–10), the tools it needs, the prompt and how answers are evaluated: a reference answer, hidden
 * tests (run in the sandbox, or by an injected `runTests`), or a judge rubric scored by a panel of
 * judges on their own endpoints (pointwise or ranking mode; see docs/JUDGES.md). The policy works
 * in up to `max_steps_per_trajectory` turns with the allowed tools (MultiTurnEnv's loop: calls in
 * the tokenizer family's format, `tool_format` to override).
 *
 * Difficulty feeds the curriculum: tasks are filtered to [min_difficulty, max_difficulty] and
 * ordered (easy_first by default); with `curriculum: adaptive` only tasks up to the current level
 * are served, and the level rises once a window of groups at that level averages
 * `advance_threshold`.
 *
 * Each episode is kept as a `Trajectory` (steps, final response, success, judge score): judges
 * read it and it is stored beside the group.
 */
import {
  type BaseEnv,
  type ChatMessage,
  DropGroupError,
  defineEnv,
  type EnvDefinition,
  type EpisodeStart,
  type EvalResult,
  hashString,
  type JsonObject,
  JudgePanel,
  MultiTurnEnv,
  mergeIntoGroup,
  panelJudges,
  parseTasks,
  runHiddenTests,
  type ScoredDataGroup,
  scoredItemFromNode,
  selectTasks,
  type Task,
  type Trajectory,
  type TrajectoryStep,
  trajectorySteps,
} from "../sdk/env";
import { codeOf, referenceScore } from "./agent-tasks-answers";
import {
  type AgentTaskItem,
  type AgentTasksConfig,
  AgentTasksConfigSchema,
  type AgentTasksDeps,
  type RunTests,
} from "./agent-tasks-config";
import { Curriculum, checkServable } from "./agent-tasks-curriculum";
import { evaluateAgentTasks } from "./agent-tasks-eval";
import { AGENT_TASK_PREFIX, agentTaskPrompt, agentTasksSimulate } from "./agent-tasks-simulate";
import { agentToolbox, checkAgentTools } from "./tools/agent-tools";

export { codeOf, finalAnswerOf, referenceScore } from "./agent-tasks-answers";
export {
  type AgentTaskItem,
  type AgentTasksConfig,
  AgentTasksConfigSchema,
  type AgentTasksDeps,
  type RunTests,
  type TestRunResult,
} from "./agent-tasks-config";
export { AGENT_TASK_PREFIX, agentTaskPrompt, agentTasksSimulate };

/** Format-neutral: the chat template (or the format's tool prompt) says how to call tools. */
const SYSTEM_PROMPT = (tools: string[]) =>
  `You are an agent that solves tasks.${tools.length ? ` You may call these tools: ${tools.join(", ")}.` : ""} When done, give your final response; put a short final answer inside <answer></answer> tags.`;

interface Episode {
  steps: TrajectoryStep[];
  finalResponse: string | null;
  messages: ChatMessage[];
  wallTimeMs: number;
  rollout: ReturnType<typeof scoredItemFromNode>;
}

/** How a group's episodes scored: per answer, whether it succeeded and what the judges gave it. */
interface Evaluated {
  scores: number[];
  /** Reference and hidden tests: the answer is right (all tests passed); judged: null. */
  success: (boolean | null)[];
  judgeScores: (number | null)[];
  judge?: JsonObject;
}

export class AgentTasksEnv extends MultiTurnEnv<AgentTaskItem, AgentTasksConfig> {
  static override envName = "agent_tasks";
  /** Set by createAgentTasksEnv: the sandbox and the judge factory. */
  static deps: AgentTasksDeps = {};
  readonly tasks: Task[];
  private readonly curriculum: Curriculum;
  private panel: JudgePanel | null = null;
  /** Groups collected so far: a task drawn again gets other seeds (else its groups repeat). */
  private collected = 0;

  constructor(...args: ConstructorParameters<typeof BaseEnv<AgentTaskItem, AgentTasksConfig>>) {
    super(...args);
    if (this.config.tasks.length === 0) {
      throw new Error(
        "agent_tasks needs tasks: set env.tasks (a list of tasks), or run `atropos-edge train --config` with tasks.task_file (docs/JUDGES.md)",
      );
    }
    const all = parseTasks(this.config.tasks, "env.tasks");
    this.tasks = selectTasks(all, {
      minDifficulty: this.config.min_difficulty,
      maxDifficulty: this.config.max_difficulty,
      order: this.config.order,
    });
    if (this.tasks.length === 0) {
      throw new Error(
        `agent_tasks: no task has a difficulty within ${this.config.min_difficulty}..${this.config.max_difficulty}`,
      );
    }
    checkAgentTools(this.config.tools);
    checkServable(this.tasks, this.config, this.deps);
    this.curriculum = new Curriculum(this.tasks, this.config);
  }

  /** The dependencies of the class this instance was built from (see createAgentTasksEnv). */
  private get deps(): AgentTasksDeps {
    return (this.constructor as typeof AgentTasksEnv).deps;
  }

  /** The current curriculum level (the highest difficulty served). */
  get curriculumLevel(): number {
    return this.curriculum.level;
  }

  override async getNextItem(): Promise<AgentTaskItem> {
    return this.curriculum.nextTask();
  }

  judgePanel(): JudgePanel {
    this.panel ??= new JudgePanel(
      this.deps.judges?.(this.config) ??
        panelJudges(this.config.judges, {
          n: this.config.n_judges ?? undefined,
          calibrations: this.config.calibration,
        }),
      { weights: this.config.judge_weights, minJudges: this.config.min_judges },
    );
    return this.panel;
  }

  protected override setupEpisode(task: Task): EpisodeStart<undefined> {
    return {
      messages: [
        { role: "system", content: SYSTEM_PROMPT(this.config.tools) },
        { role: "user", content: agentTaskPrompt(task) },
      ],
      state: undefined,
      toolbox: agentToolbox(this.config, this.config.tools, this.deps),
    };
  }

  protected override maxTurns(): number {
    return this.config.max_steps_per_trajectory;
  }

  protected override episodeSeed(task: Task, episode: number): number {
    return hashString(task.id) + episode * 7919;
  }

  async runEpisode(task: Task, episode: number): Promise<Episode> {
    const e = await this.rollout(task, episode);
    const last = e.turns.at(-1)?.reply;
    // Scores are set once the whole group is evaluated (judges compare answers).
    const rollout = scoredItemFromNode(e.node, 0, {
      tokenizer: this.tokenizer,
      messages: e.messages,
    });
    return {
      steps: trajectorySteps(e.turns),
      finalResponse: e.finished && last ? last.text : null,
      messages: e.messages,
      wallTimeMs: e.wallTimeMs,
      rollout,
    };
  }

  /** Scores for a group's episodes, plus the judge report when judges scored them. */
  async evaluateEpisodes(
    task: Task,
    episodes: readonly Pick<Episode, "steps" | "finalResponse">[],
  ): Promise<Evaluated> {
    const ev = task.evaluation;
    const noJudge = episodes.map(() => null);
    if (ev.kind === "reference") {
      const scores = episodes.map((e) =>
        e.finalResponse === null ? 0 : referenceScore(e.finalResponse, ev),
      );
      return { scores, success: scores.map((s) => s === 1), judgeScores: noJudge };
    }
    if (ev.kind === "hidden_tests") {
      const runTests = this.deps.runTests ?? this.sandboxRunTests();
      const results = await Promise.all(
        episodes.map((e) =>
          e.finalResponse === null
            ? { passed: 0, total: 0 }
            : runTests(codeOf(e.finalResponse), ev.tests, {
                language: ev.language,
                taskId: task.id,
              }),
        ),
      );
      return {
        scores: results.map((r) => (r.total > 0 ? r.passed / r.total : 0)),
        success: results.map((r) => r.total > 0 && r.passed === r.total),
        judgeScores: noJudge,
      };
    }
    const inputs = episodes.map((e) => ({
      task: task.prompt,
      steps: e.steps,
      final_response: e.finalResponse,
    }));
    const judged = await this.judgePanel().scoreGroup(inputs, this.config.judge_mode, {
      criteria: ev.rubric,
      weights: ev.weights,
    });
    this.observe("judge/failures", judged.report.failures.length);
    this.observe("judge/calls", judged.report.calls);
    if (judged.report.kendall_tau !== null)
      this.observe("judge/kendall_tau", judged.report.kendall_tau);
    const short = judged.scores.indexOf(null);
    if (short >= 0) {
      const got = judged.report.scores.filter((row) => row[short] !== null).length;
      throw new DropGroupError(
        `only ${got} of ${judged.report.judges.length} judges scored an answer (min ${this.config.min_judges})`,
      );
    }
    const scores = judged.scores as number[];
    return {
      scores,
      success: noJudge,
      judgeScores: scores,
      // why: JudgeReport is plain JSON (numbers, strings, nulls, arrays).
      judge: judged.report as unknown as JsonObject,
    };
  }

  /**
   * Hidden tests in the sandbox the runtime hands this env (the CLI: a local one; a Worker: its
   * SANDBOX service, in the feeder too). A sandbox that is missing or down drops the group: a score of
   * 0 would blame the answer.
   */
  private sandboxRunTests(): RunTests {
    const limits = {
      timeout_ms: this.config.test_timeout_ms,
      memory_mb: this.config.test_memory_mb,
    };
    return async (code, tests) => {
      const sandbox = await this.sandbox().catch((err: unknown) => {
        throw new DropGroupError(
          `hidden tests need a sandbox: ${err instanceof Error ? err.message : String(err)}`,
        );
      });
      const result = await runHiddenTests(sandbox, { code, tests, ...limits });
      if (result.run.error?.kind === "unavailable") {
        throw new DropGroupError(`hidden tests need a sandbox: ${result.run.error.message}`);
      }
      this.observe("train/sandbox_ms", result.run.wall_ms);
      this.observe("train/sandbox_timeout", result.run.error?.kind === "timeout" ? 1 : 0);
      // A run that ended before reporting (timeout, memory) passed nothing out of at least one.
      return { passed: result.passed, total: result.total ?? 1, output: result.run.stdout };
    };
  }

  override async collectTrajectories(
    item: AgentTaskItem,
  ): Promise<[ScoredDataGroup | null, AgentTaskItem[]]> {
    const task = item;
    const first = this.collected++ * this.config.group_size;
    const episodes = await Promise.all(
      Array.from({ length: this.config.group_size }, (_, i) => this.runEpisode(task, first + i)),
    );
    const { scores, success, judgeScores, judge } = await this.evaluateEpisodes(task, episodes);
    for (const s of scores) this.observe(`train/score_difficulty_${task.difficulty}`, s);
    const group = mergeIntoGroup(episodes.map((e, i) => ({ ...e.rollout, scores: scores[i]! })));
    group.trajectories = episodes.map(
      (e, sequence): Trajectory => ({
        task: task.prompt,
        steps: e.steps,
        final_response: e.finalResponse,
        success: success[sequence] ?? null,
        judge_score: judgeScores[sequence] ?? null,
        token_count: e.rollout.tokens.length,
        wall_time_ms: e.wallTimeMs,
        sequence,
        source: "env",
      }),
    );
    const meta = { task_id: task.id, task_type: task.task_type, difficulty: task.difficulty };
    group.group_overrides = {
      ...(group.group_overrides ?? {}),
      ...meta,
      ...(judge ? { judge } : {}),
    };
    return [group, []];
  }

  /** Adaptive curriculum: a window of groups at the current level decides when to move up. */
  override recordScores(item: AgentTaskItem, scores: number[]): void {
    this.curriculum.record(item, scores);
  }

  /** Every served task, eval_samples_per_item episodes each (src/envs/agent-tasks-eval.ts). */
  override async evaluateWithSamples(): Promise<EvalResult> {
    return evaluateAgentTasks(this, (items, fn) => this.mapEval(items, fn));
  }

  override saveCheckpoint(): JsonObject {
    return this.curriculum.checkpoint();
  }

  override loadCheckpoint(state: JsonObject): void {
    this.curriculum.restore(state);
  }
}

const DESCRIPTION =
  "Agent tasks from a tasks file: reference answers, hidden tests or a judge panel";

/**
 * The env with its dependencies replaced: `runTests` (instead of the sandbox, for hidden tests)
 * and how judges are built. The default export runs hidden tests in the sandbox and builds one
 * judge per configured endpoint.
 */
export function createAgentTasksEnv(deps: AgentTasksDeps = {}): EnvDefinition {
  class WiredAgentTasksEnv extends AgentTasksEnv {
    static override deps = deps;
  }
  return defineEnv(WiredAgentTasksEnv, AgentTasksConfigSchema, DESCRIPTION, {
    simulate: agentTasksSimulate,
  });
}

export default defineEnv(AgentTasksEnv, AgentTasksConfigSchema, DESCRIPTION, {
  simulate: agentTasksSimulate,
});
