import {
  BaseEnv,
  BaseEnvConfigSchema,
  DropGroupError,
  defineEnv,
  type EvalResult,
  type JsonObject,
  mergeIntoGroup,
  type ScoredDataGroup,
  type SimulatedItem,
  sampleChat,
  scoredItemFromNode,
  z,
} from "../sdk/env";
/**
 * llm_judge (RLAIF): the policy answers open questions; `num_judges` judge calls (through the
 * InferenceClient, eval pool, different seeds) grade each answer against a rubric and end with
 * "Score: N" (1–10). Per answer: judge failures (errors, no parsable score) are ignored when at
 * least `min_judges` scores remain; the min and max are trimmed (with ≥3 scores) and the rest
 * averaged; the result is mapped to [0, 1]. Too few judges for any answer → the group is dropped
 * with a reason (DropGroupError).
 */

export const JUDGE_MARKER = "JUDGE RUBRIC";
export const POLICY_QUESTION_PREFIX = "Question for the assistant:";

export const DEFAULT_RUBRIC =
  "Judge the response for correctness, clarity and completeness. A great answer is accurate, " +
  "directly addresses the question and lists its key points. A poor answer is vague or off-topic.";

export const JUDGE_QUESTIONS = [
  "Why is the sky blue?",
  "How does a vaccine train the immune system?",
  "What causes the seasons on Earth?",
  "Why do ice cubes float in water?",
  "How does a binary search work?",
  "What is the difference between weather and climate?",
  "Why do we have leap years?",
  "How do noise-cancelling headphones work?",
  "What does a compiler do?",
  "Why does bread rise?",
  "How do bees communicate where flowers are?",
  "What is compound interest?",
];

export const LlmJudgeConfigSchema = BaseEnvConfigSchema.extend({
  num_judges: z.number().int().min(1).default(3),
  min_judges: z.number().int().min(1).default(2),
  judge_temperature: z.number().min(0).default(0.7),
  judge_max_tokens: z.number().int().positive().default(256),
  rubric: z.string().default(DEFAULT_RUBRIC),
  temperature: z.number().min(0).default(1.0),
  /** Questions evaluate() asks (the first ones of the bundled list). */
  eval_size: z.number().int().min(0).default(12),
  /** evaluate(): an answer whose judged score (0–1) reaches this counts as correct. */
  eval_pass_score: z.number().min(0).max(1).default(0.6),
});
export type LlmJudgeConfig = z.output<typeof LlmJudgeConfigSchema>;

export type JudgeItem = { id: string; question: string };

export function judgePrompt(rubric: string, question: string, response: string): string {
  return `${JUDGE_MARKER}: ${rubric}\n\n[Question]\n${question}\n\n[Response]\n${response}\n\nRate the response from 1 to 10 and end with a line "Score: N".`;
}

/** The last "Score: N" (1–10, decimals allowed) in a judge reply, or null. */
export function parseJudgeScore(text: string): number | null {
  const matches = [...text.matchAll(/score\s*[:=]\s*(\d+(?:\.\d+)?)/gi)];
  const last = matches.at(-1)?.[1];
  if (last === undefined) return null;
  const v = Number(last);
  return v >= 1 && v <= 10 ? v : null;
}

/** Drop one min and one max when ≥3 scores, then average. */
export function trimmedMean(scores: number[]): number {
  const sorted = [...scores].sort((a, b) => a - b);
  const kept = sorted.length >= 3 ? sorted.slice(1, -1) : sorted;
  return kept.reduce((a, b) => a + b, 0) / kept.length;
}

/** Toy-policy answers to the policy prompt (judge prompts lack the prefix, so they never match). */
export function llmJudgeSimulate(item: JudgeItem): SimulatedItem {
  return {
    match: `${POLICY_QUESTION_PREFIX} ${item.question}`,
    candidates: [
      {
        text: `Here is a direct answer to "${item.question}". Key points: the main cause, how it works, and a short example.`,
        label: "key_points",
      },
      { text: "It depends on many things, hard to say.", label: "vague" },
      { text: `You asked: ${item.question} That is a good question.`, label: "restates_question" },
    ],
  };
}

export class LlmJudgeEnv extends BaseEnv<JudgeItem, LlmJudgeConfig> {
  static override envName = "llm_judge";
  private iter = 0;

  override async getNextItem(): Promise<JudgeItem> {
    const i = this.iter++ % JUDGE_QUESTIONS.length;
    return { id: `q-${i}`, question: JUDGE_QUESTIONS[i]! };
  }

  /** Judge scores for one response (failures omitted); `observe`: count failures (training). */
  async judge(question: string, response: string, observe = true): Promise<number[]> {
    const calls = Array.from({ length: this.config.num_judges }, async (_, j) => {
      try {
        const res = await this.inference.chatCompletion({
          messages: [
            { role: "user", content: judgePrompt(this.config.rubric, question, response) },
          ],
          n: 1,
          temperature: this.config.judge_temperature,
          max_tokens: this.config.judge_max_tokens,
          seed: j,
          split: "eval",
        });
        return parseJudgeScore(res.choices[0]?.message.content ?? "");
      } catch {
        return null;
      }
    });
    const scores = await Promise.all(calls);
    const valid = scores.filter((s): s is number => s !== null);
    if (observe) this.observe("judge/failures", scores.length - valid.length);
    return valid;
  }

  override async collectTrajectories(
    item: JudgeItem,
  ): Promise<[ScoredDataGroup | null, JudgeItem[]]> {
    const messages = [{ role: "user", content: `${POLICY_QUESTION_PREFIX} ${item.question}` }];
    const choices = await sampleChat(this.inference, this.tokenizer, messages, {
      n: this.config.group_size,
      max_tokens: this.config.max_token_length,
      temperature: this.config.temperature,
    });
    const judged = await Promise.all(choices.map((c) => this.judge(item.question, c.text)));
    const short = judged.findIndex((s) => s.length < this.config.min_judges);
    if (short >= 0) {
      throw new DropGroupError(
        `only ${judged[short]!.length} of ${this.config.num_judges} judges scored a response (min ${this.config.min_judges})`,
      );
    }
    const items = choices.map((c, i) =>
      scoredItemFromNode(c.node, (trimmedMean(judged[i]!) - 1) / 9, {
        tokenizer: this.tokenizer,
        messages: c.messages,
      }),
    );
    return [mergeIntoGroup(items), []];
  }

  /**
   * eval_size questions, eval_samples_per_item answers each (greedy for one), judged as in
   * training: correct when the score reaches eval_pass_score. eval/avg@k, eval/pass@j,
   * eval/mean_score (answers too few judges scored count 0, and in eval/unjudged).
   */
  override async evaluateWithSamples(): Promise<EvalResult> {
    const n = Math.min(this.config.eval_size, JUDGE_QUESTIONS.length);
    const questions = JUDGE_QUESTIONS.slice(0, n);
    const k = this.config.eval_samples_per_item;
    const scores: number[] = [];
    let unjudged = 0;
    const result = await this.evaluateSampled(questions, async (question, sample) => {
      const res = await this.inference.chatCompletion({
        messages: [{ role: "user", content: `${POLICY_QUESTION_PREFIX} ${question}` }],
        n: 1,
        temperature: k === 1 ? 0 : this.config.temperature,
        max_tokens: this.config.max_token_length,
        seed: sample,
        split: "eval",
      });
      const answer = res.choices[0]?.message.content ?? "";
      const judged = await this.judge(question, answer, false);
      const score = judged.length >= this.config.min_judges ? (trimmedMean(judged) - 1) / 9 : null;
      if (score === null) unjudged++;
      scores.push(score ?? 0);
      return {
        correct: score !== null && score >= this.config.eval_pass_score,
        record: { question, answer, judge_scores: judged, score },
      };
    });
    const mean = scores.reduce((a, b) => a + b, 0) / Math.max(1, scores.length);
    return {
      metrics: { ...result.metrics, "eval/mean_score": mean, "eval/unjudged": unjudged },
      samples: result.samples,
    };
  }

  override saveCheckpoint(): JsonObject {
    return { iter: this.iter };
  }

  override loadCheckpoint(state: JsonObject): void {
    this.iter = Number(state.iter ?? 0);
  }
}

export default defineEnv(
  LlmJudgeEnv,
  LlmJudgeConfigSchema,
  "RLAIF: several LLM judges score answers (trimmed mean)",
  {
    simulate: llmJudgeSimulate,
  },
);
