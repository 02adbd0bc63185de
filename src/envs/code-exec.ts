/**
 * code_exec: write a Python function; hidden unit tests, run in the sandbox, score it. The score
 * is the fraction of tests passed; code that times out, runs out of memory, fails to compile or
 * is missing scores 0. Every answer runs in its own throwaway sandbox, so a hostile answer
 * (an endless loop, unbounded allocation, reading host files, opening sockets) costs at most
 * `timeout_ms` and touches nothing but itself.
 */
import {
  BaseEnv,
  BaseEnvConfigSchema,
  defineEnv,
  type EvalResult,
  type JsonObject,
  mergeIntoGroup,
  runHiddenTests,
  type Sandbox,
  type SandboxRunResult,
  type SimulatedItem,
  sampleChat,
  scoredItemFromNode,
  z,
} from "../sdk/env";
import { type CodeProblem, generateCodeProblems } from "./data/code-exec-problems";

export const CODE_TASK_PREFIX = "Code task:";
export const CODE_SYSTEM_PROMPT =
  "You write correct, efficient Python 3 (standard library only). Reply with one ```python code block that defines the requested function.";

export const CodeExecConfigSchema = BaseEnvConfigSchema.extend({
  /** Order in which the bundled problems are handed out. */
  seed: z.number().int().default(11),
  /** Wall-clock limit for one answer's tests; the run is killed when it passes. */
  timeout_ms: z.number().int().positive().max(60_000).default(3000),
  /** Memory one answer may use. */
  memory_mb: z.number().int().positive().max(1024).default(128),
  temperature: z.number().min(0).default(1.0),
  max_tokens: z.number().int().positive().default(768),
  /** Problems evaluate() asks, spread evenly over the bundled set. */
  eval_size: z.number().int().min(0).default(16),
});
export type CodeExecConfig = z.output<typeof CodeExecConfigSchema>;

export type CodeItem = { id: string; index: number };

export const CODE_PROBLEMS: readonly CodeProblem[] = generateCodeProblems();

export function codePrompt(problem: CodeProblem): string {
  return `${CODE_TASK_PREFIX} ${problem.prompt} (problem ${problem.id})`;
}

/** The code of an answer: its last ```python block, else the text itself when it defines something. */
export function extractCode(answer: string): string | null {
  const blocks = [...answer.matchAll(/```(?:python|py)?\s*\n([\s\S]*?)```/g)];
  const last = blocks.at(-1)?.[1];
  if (last !== undefined) return last;
  return /^\s*(def|import|from|class)\s/m.test(answer) ? answer : null;
}

/** The problem's hidden tests as Python test code: one `assert` per case. */
export function problemTests(problem: CodeProblem): string {
  const literal = (value: unknown) => `_loads(${JSON.stringify(JSON.stringify(value))})`;
  return [
    "from json import loads as _loads",
    ...problem.tests.map(
      (t) => `assert ${problem.entry}(*${literal(t.args)}) == ${literal(t.expected)}`,
    ),
  ].join("\n");
}

export interface CodeScore {
  score: number;
  passed: number;
  total: number;
  run: SandboxRunResult | null;
}

/** Run an answer's code against a problem's hidden tests in the sandbox. */
export async function scoreAnswer(
  sandbox: Sandbox,
  problem: CodeProblem,
  answer: string,
  limits: { timeout_ms: number; memory_mb: number },
): Promise<CodeScore> {
  const total = problem.tests.length;
  const code = extractCode(answer);
  if (code === null) return { score: 0, passed: 0, total, run: null };
  const result = await runHiddenTests(sandbox, { code, tests: problemTests(problem), ...limits });
  return { score: result.score, passed: result.passed, total, run: result.run };
}

export class CodeExecEnv extends BaseEnv<CodeItem, CodeExecConfig> {
  static override envName = "code_exec";
  private served = 0;

  override async getNextItem(): Promise<CodeItem> {
    const n = CODE_PROBLEMS.length;
    // A fixed stride coprime with the set's size walks every problem once per epoch.
    const index = (this.config.seed + this.served++ * 29) % n;
    return { id: CODE_PROBLEMS[index]!.id, index };
  }

  override async collectTrajectories(item: CodeItem) {
    const problem = CODE_PROBLEMS[item.index];
    if (!problem || problem.id !== item.id) throw new Error(`unknown code problem ${item.id}`);
    const messages = [
      { role: "system" as const, content: CODE_SYSTEM_PROMPT },
      { role: "user" as const, content: codePrompt(problem) },
    ];
    const choices = await sampleChat(this.inference, this.tokenizer, messages, {
      n: this.config.group_size,
      max_tokens: this.config.max_tokens,
      temperature: this.config.temperature,
    });
    const sandbox = await this.sandbox();
    const limits = { timeout_ms: this.config.timeout_ms, memory_mb: this.config.memory_mb };
    const scores = await Promise.all(
      choices.map((c) => scoreAnswer(sandbox, problem, c.text, limits)),
    );
    for (const s of scores) {
      this.observe("train/pass_rate", s.score);
      this.observe("train/all_passed", s.passed === s.total ? 1 : 0);
      this.observe("train/sandbox_timeout", s.run?.error?.kind === "timeout" ? 1 : 0);
      this.observe("train/sandbox_memory", s.run?.error?.kind === "memory" ? 1 : 0);
      if (s.run) this.observe("train/sandbox_ms", s.run.wall_ms);
    }
    const rollouts = choices.map((c, i) =>
      scoredItemFromNode(c.node, scores[i]!.score, {
        tokenizer: this.tokenizer,
        messages: c.messages,
      }),
    );
    return [mergeIntoGroup(rollouts), []] as const satisfies [unknown, CodeItem[]];
  }

  /**
   * eval_size problems spread over the bundled set (the same every time, so the curve compares
   * across steps), eval_samples_per_item answers each (greedy for one): an answer is correct when
   * it passes every hidden test. eval/avg@k, eval/pass@j and eval/test_pass_rate (tests passed).
   */
  override async evaluateWithSamples(): Promise<EvalResult> {
    const n = Math.min(this.config.eval_size, CODE_PROBLEMS.length);
    const stride = CODE_PROBLEMS.length / Math.max(1, n);
    const problems = Array.from({ length: n }, (_, i) => CODE_PROBLEMS[Math.floor(i * stride)]!);
    const k = this.config.eval_samples_per_item;
    const sandbox = await this.sandbox();
    const limits = { timeout_ms: this.config.timeout_ms, memory_mb: this.config.memory_mb };
    const passRates: number[] = [];
    const result = await this.evaluateSampled(problems, async (problem, sample) => {
      const res = await this.inference.chatCompletion({
        messages: [
          { role: "system", content: CODE_SYSTEM_PROMPT },
          { role: "user", content: codePrompt(problem) },
        ],
        n: 1,
        temperature: k === 1 ? 0 : this.config.temperature,
        max_tokens: this.config.max_tokens,
        seed: sample,
        split: "eval",
      });
      const answer = res.choices[0]?.message.content ?? "";
      const scored = await scoreAnswer(sandbox, problem, answer, limits);
      passRates.push(scored.score);
      return {
        correct: scored.total > 0 && scored.passed === scored.total,
        record: { id: problem.id, passed: scored.passed, total: scored.total, answer },
      };
    });
    const mean = passRates.reduce((a, b) => a + b, 0) / Math.max(1, passRates.length);
    return { metrics: { ...result.metrics, "eval/test_pass_rate": mean }, samples: result.samples };
  }

  override saveCheckpoint(): JsonObject {
    return { served: this.served };
  }

  override loadCheckpoint(state: JsonObject): void {
    this.served = Number(state.served ?? 0);
  }
}

/** The toy policy's answers: the reference solution, a buggy one, or no code at all. */
export function codeExecSimulate(item: CodeItem): SimulatedItem {
  const problem = CODE_PROBLEMS[item.index]!;
  const block = (code: string) => `Here is my solution.\n\`\`\`python\n${code}\n\`\`\``;
  return {
    match: codePrompt(problem),
    candidates: [
      { text: block(problem.solution), label: "correct" },
      { text: block(problem.buggy), label: "buggy" },
      { text: "I would loop over the input and build the answer.", label: "no_code" },
    ],
  };
}

export default defineEnv(
  CodeExecEnv,
  CodeExecConfigSchema,
  "Write a Python function; hidden unit tests run in the sandbox score it",
  { simulate: codeExecSimulate },
);
