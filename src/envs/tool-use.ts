/**
 * tool_use: a multi-turn agent task. The model must compute an expression with the `calculator`
 * tool, store the result with `kv_set`, and answer in <answer> tags — in at most `max_steps` turns.
 * The loop is MultiTurnEnv's: tool calls in the tokenizer family's format (`tool_format` to
 * override), every assistant turn trainable in one tracked sequence.
 *
 * Rewards: each turn gets a process reward (useful successful call +0.5, other successful call
 * +0.1, failed/invalid call −0.5); the final turn gets the terminal reward (1 for a correct
 * answer, +0.5 when the store holds the right value). Per-token advantages come from
 * process-supervision advantages over the whole group; the group score is the terminal reward.
 */
import {
  advantagesPerToken,
  allowedTools,
  answersEquivalent,
  type BaseEnv,
  type ChatMessage,
  defineEnv,
  type EpisodeStart,
  type EvalResult,
  fileOpsTool,
  hashString,
  type JsonObject,
  jsExecTool,
  MultiTurnEnv,
  mergeIntoGroup,
  processSupervisionAdvantages,
  pythonExecTool,
  type ScoredDataGroup,
  type ScoredDataItem,
  ScratchFs,
  SeededRng,
  type SimCandidate,
  type SimulatedItem,
  scoredItemFromNode,
  Toolbox,
  ToolEnvConfigSchema,
  type ToolOutcome,
  type Trajectory,
  trajectorySteps,
  z,
} from "../sdk/env";
import { calculate, formatNumber } from "./tools/calculator";
import { standardTools } from "./tools/standard-tools";

export const TOOL_TASK_PREFIX = "Tool task:";
/** Format-neutral: the chat template (or the format's tool prompt) says how to call tools. */
export const TOOL_SYSTEM_PROMPT =
  "You are an agent that solves tasks with tools. Call the tools you are given; when done, reply with the final result inside <answer></answer> tags.";

export const TOOL_NAMES = [
  "calculator",
  "kv_set",
  "kv_get",
  "python_exec",
  "js_exec",
  "file_ops",
] as const;

export const ToolUseConfigSchema = ToolEnvConfigSchema.extend({
  seed: z.number().int().default(3),
  max_steps: z.number().int().positive().default(4),
  tool_timeout_ms: z.number().int().positive().default(1000),
  /**
   * The tools the model may call. `python_exec`, `js_exec` and `file_ops` run in the sandbox
   * and an episode's scratch filesystem; the default is the calculator task's three.
   */
  tools: z.array(z.enum(TOOL_NAMES)).default(["calculator", "kv_set", "kv_get"]),
  temperature: z.number().min(0).default(1.0),
  /** Discount for process-supervision returns (1 = plain reverse cumulative sum). */
  gamma: z.number().min(0).max(1).default(1),
  /** Held-out tasks evaluate() runs (their own seed, never served for training). */
  eval_size: z.number().int().min(0).default(16),
});
export type ToolUseConfig = z.output<typeof ToolUseConfigSchema>;

export type ToolTask = { id: string; expression: string; key: string; answer: string };

export interface Episode {
  steps: ReturnType<typeof trajectorySteps>;
  messages: ChatMessage[];
  finalAnswer: string | null;
  /** The last assistant message's text. */
  finalResponse: string | null;
  correct: boolean;
  wallTimeMs: number;
  /** One reward per assistant turn; the last is the terminal reward when the episode finished. */
  turnRewards: number[];
  score: number;
  rollout: ScoredDataItem;
}

export function toolTaskPrompt(task: Pick<ToolTask, "expression" | "key">): string {
  return `${TOOL_TASK_PREFIX} compute ${task.expression} with the calculator tool, store the result under the key "${task.key}" with kv_set, then reply with the result inside <answer></answer> tags.`;
}

const TASK = /compute (.+?) with the calculator tool, store the result under the key "([^"]+)"/g;

/**
 * The next assistant message, good then bad, for a tool_use conversation so far: call the
 * calculator, then store its result, then answer; the bad ones answer without the tool, skip
 * storing, or answer off by one. Shared by `simulate` and the simulator's scripted responder.
 */
export function toolUseCandidates(promptText: string): SimCandidate[] {
  const task = [...promptText.matchAll(TASK)].at(-1);
  const expression = task?.[1] ?? "1 + 1";
  const key = task?.[2] ?? "result";
  const results = [...promptText.matchAll(/calculator result: (-?[\d.]+)/g)];
  const call = (name: string, args: Record<string, unknown>) =>
    `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
  if (results.length === 0) {
    return [
      {
        text: `I need to evaluate the expression first.\n${call("calculator", { expression })}`,
        label: "call_calculator",
      },
      { text: "I can do this in my head.\n<answer>0</answer>", label: "guess_without_tools" },
    ];
  }
  const value = results.at(-1)![1]!;
  const answer = (v: string) => `The result is ${v}.\n<answer>${v}</answer>`;
  const offByOne = { text: answer(String(Number(value) + 1)), label: "answer_off_by_one" };
  if (!promptText.includes("kv_set result: ok")) {
    return [
      { text: `Now I store the result.\n${call("kv_set", { key, value })}`, label: "store_result" },
      offByOne,
    ];
  }
  return [{ text: answer(value), label: "answer_result" }, offByOne];
}

/** The toy policy answers a task from its prompt (see docs/WRITING_ENVS.md). */
export function toolUseSimulate(task: ToolTask): SimulatedItem {
  return { match: toolTaskPrompt(task), candidates: toolUseCandidates };
}

const KEYS = ["total", "result", "sum", "value", "answer", "memo"];

export function generateToolTask(rng: SeededRng, index: number): ToolTask {
  const a = rng.int(2, 60);
  const b = rng.int(2, 30);
  const c = rng.int(2, 20);
  const [op1, op2] = [rng.pick(["+", "-", "*"]), rng.pick(["+", "-", "*"])];
  const expression =
    rng.next() < 0.5 ? `(${a} ${op1} ${b}) ${op2} ${c}` : `${a} ${op1} ${b} ${op2} ${c}`;
  return {
    id: `tool-${index}`,
    expression,
    key: rng.pick(KEYS),
    answer: formatNumber(calculate(expression)),
  };
}

interface ToolUseState {
  task: ToolTask;
  store: Map<string, string>;
}

export class ToolUseEnv extends MultiTurnEnv<ToolTask, ToolUseConfig, ToolUseState> {
  static override envName = "tool_use";
  private rng: SeededRng;
  private served = 0;

  constructor(...args: ConstructorParameters<typeof BaseEnv<ToolTask, ToolUseConfig>>) {
    super(...args);
    this.rng = new SeededRng(this.config.seed);
  }

  override async getNextItem(): Promise<ToolTask> {
    return generateToolTask(this.rng, this.served++);
  }

  /**
   * eval_size held-out tasks, eval_samples_per_item episodes each; an episode is correct when
   * its answer is: eval/avg@k and eval/pass@j.
   */
  override async evaluateWithSamples(): Promise<EvalResult> {
    const rng = new SeededRng(this.config.seed + 1_000_003);
    const tasks = Array.from({ length: this.config.eval_size }, (_, i) => generateToolTask(rng, i));
    return this.evaluateSampled(tasks, async (task, sample) => {
      const e = await this.runEpisode(task, sample, false);
      const correct = e.finalAnswer !== null && answersEquivalent(e.finalAnswer, task.answer);
      return {
        correct,
        record: { id: task.id, expression: task.expression, answer: e.finalAnswer, score: e.score },
      };
    });
  }

  protected override setupEpisode(task: ToolTask): EpisodeStart<ToolUseState> {
    const store = new Map<string, string>();
    const scratch = new ScratchFs();
    const timeoutMs = this.config.tool_timeout_ms;
    const toolbox = new Toolbox(
      allowedTools(
        {
          ...standardTools(store, timeoutMs),
          python_exec: pythonExecTool({ scratch, timeoutMs }),
          js_exec: jsExecTool({ scratch, timeoutMs }),
          file_ops: fileOpsTool(scratch, timeoutMs),
        },
        this.config.tools,
      ),
    );
    return {
      messages: [
        { role: "system", content: TOOL_SYSTEM_PROMPT },
        { role: "user", content: toolTaskPrompt(task) },
      ],
      state: { task, store },
      toolbox,
    };
  }

  protected override maxTurns(): number {
    return this.config.max_steps;
  }

  protected override episodeSeed(task: ToolTask, episode: number): number {
    return hashString(task.id) + episode * 7919;
  }

  /**
   * One episode; public so tools and rewards can be inspected in tests and by the CLI.
   * `observe`: record training observations (off for evaluation episodes).
   */
  async runEpisode(task: ToolTask, episode = 0, observe = true): Promise<Episode> {
    const e = await this.rollout(task, episode, observe ? {} : { split: "eval" });
    const last = e.turns.at(-1)?.reply;
    const finalResponse = last?.text ?? null;
    const finalAnswer =
      e.finished && last
        ? (/<answer>\s*([\s\S]*?)\s*<\/answer>/i.exec(last.text)?.[1] ?? null)
        : null;
    // Process rewards: useful successful call +0.5, other successful call +0.1, failed −0.5.
    const turnRewards = e.turns
      .filter((turn) => turn.tools.length > 0)
      .map((turn) =>
        turn.tools.reduce(
          (sum, out) => sum + (out.error ? -0.5 : usefulCall(out, task) ? 0.5 : 0.1),
          0,
        ),
      );
    const correct = finalAnswer !== null && answersEquivalent(finalAnswer, task.answer);
    const stored = e.state.store.get(task.key) === task.answer;
    const score = (correct ? 1 : 0) + (stored ? 0.5 : 0);
    if (e.finished) turnRewards.push(score);
    else if (turnRewards.length > 0) turnRewards[turnRewards.length - 1]! += score;
    const steps = trajectorySteps(e.turns);
    if (observe) {
      this.observe("train/correct", correct ? 1 : 0);
      this.observe("train/steps", steps.length);
    }
    const rollout = scoredItemFromNode(e.node, score, {
      tokenizer: this.tokenizer,
      messages: e.messages,
    });
    return {
      steps,
      messages: e.messages,
      finalAnswer,
      finalResponse,
      correct,
      wallTimeMs: e.wallTimeMs,
      turnRewards,
      score,
      rollout,
    };
  }

  override async collectTrajectories(
    task: ToolTask,
  ): Promise<[ScoredDataGroup | null, ToolTask[]]> {
    const episodes = await Promise.all(
      Array.from({ length: this.config.group_size }, (_, i) => this.runEpisode(task, i)),
    );
    const turnAdvantages = processSupervisionAdvantages(
      episodes.map((e) => (e.turnRewards.length > 0 ? e.turnRewards : [0])),
      { gamma: this.config.gamma, onZeroStd: "zeros" },
    );
    const rollouts = episodes.map((e, i) => ({
      ...e.rollout,
      advantages: advantagesPerToken(e.rollout.masks, turnAdvantages[i]!),
    }));
    const trajectories = episodes.map((e, sequence) => trajectoryOf(task, e, sequence));
    return [{ ...mergeIntoGroup(rollouts), trajectories }, []];
  }

  override saveCheckpoint(): JsonObject {
    return { rng_state: this.rng.state, served: this.served };
  }

  override loadCheckpoint(state: JsonObject): void {
    if (typeof state.rng_state === "number") this.rng.state = state.rng_state;
    this.served = Number(state.served ?? 0);
  }
}

/** The episode as data, stored beside the group (the API's trajectories route serves it). */
function trajectoryOf(task: ToolTask, episode: Episode, sequence: number): Trajectory {
  return {
    task: toolTaskPrompt(task),
    steps: episode.steps.map((step) => ({ ...step, tool_call: { ...step.tool_call } })),
    final_response: episode.finalResponse,
    success: episode.correct,
    judge_score: null,
    token_count: episode.rollout.tokens.length,
    wall_time_ms: episode.wallTimeMs,
    sequence,
    source: "env",
  };
}

/** A call that moves the task forward: the right calculation, or storing the right value. */
function usefulCall(call: ToolOutcome, task: ToolTask): boolean {
  if (call.name === "calculator") return call.result === task.answer;
  if (call.name === "kv_set")
    return call.arguments.key === task.key && String(call.arguments.value) === task.answer;
  return false;
}

export default defineEnv(
  ToolUseEnv,
  ToolUseConfigSchema,
  "Multi-turn calculator + key-value tools with process rewards",
  {
    simulate: toolUseSimulate,
  },
);
