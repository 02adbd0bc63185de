/**
 * gsm8k_lite: GSM8K-style math word problems (bundled, template-generated; or any GSM8K-format
 * JSONL from a URL or from text the runtime read from R2). Reward: +1 when the final answer
 * (\boxed{}, <answer>, ####) equals the gold answer, −1 otherwise; groups where every rollout is
 * correct get the threshold length penalty so shorter correct answers are preferred.
 * With `curriculum_levels` > 1 the training problems are split by question length into that many
 * levels; problems up to the current level are drawn, and the level follows the mean score of the
 * current level's groups (advance and fall-back thresholds; checkpointed).
 */
import {
  AccuracyReward,
  applyLengthPenaltyIfAllCorrect,
  BaseEnv,
  BaseEnvConfigSchema,
  Curriculum,
  defineEnv,
  type EvalResult,
  extractGoldAnswer,
  type JsonObject,
  mergeIntoGroup,
  type ScoredDataGroup,
  SeededRng,
  type SimulatedItem,
  sampleChat,
  scoredItemFromNode,
  z,
} from "../sdk/env";
import { GSM8K_LITE_JSONL } from "./data/gsm8k-lite-jsonl";

export const GSM8K_SYSTEM_PROMPT =
  "You are a careful math tutor. Reason step by step, then give the final answer as \\boxed{N}.";
export const GSM8K_PROBLEM_PREFIX = "Math problem: ";

export const Gsm8kLiteConfigSchema = BaseEnvConfigSchema.extend({
  /** GSM8K-format JSONL ({question, answer: "... #### N"}) to fetch instead of the bundled set. */
  dataset_url: z.string().url().nullable().default(null),
  /** Problems held out for evaluate() (taken from the end of the dataset). */
  eval_size: z.number().int().min(0).default(20),
  temperature: z.number().min(0).default(1.0),
  shuffle_seed: z.number().int().default(0),
  /** Difficulty levels by question length; 1 = no curriculum (every problem, in shuffled order). */
  curriculum_levels: z.number().int().min(1).default(1),
  curriculum_window: z.number().int().positive().default(8),
  /** Scores are +1/−1, so a mean of 0.5 is 75% correct. */
  curriculum_advance_threshold: z.number().min(-1).max(1).default(0.5),
  curriculum_fallback_threshold: z.number().min(-1).max(1).nullable().default(null),
});
export type Gsm8kLiteConfig = z.output<typeof Gsm8kLiteConfigSchema>;

export type Gsm8kItem = {
  id: string;
  question: string;
  gold: string;
  /** The curriculum level the problem belongs to (only with curriculum_levels > 1). */
  level?: number;
};

export function parseGsm8kJsonl(text: string): Gsm8kItem[] {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line, i) => {
      const row = JSON.parse(line) as { id?: string; question?: string; answer?: string };
      if (typeof row.question !== "string" || typeof row.answer !== "string") {
        throw new Error(`gsm8k line ${i + 1}: needs string "question" and "answer"`);
      }
      return {
        id: row.id ?? `row-${i}`,
        question: row.question,
        gold: extractGoldAnswer(row.answer),
      };
    });
}

export function gsm8kMessages(question: string) {
  return [
    { role: "system", content: GSM8K_SYSTEM_PROMPT },
    { role: "user", content: `${GSM8K_PROBLEM_PREFIX}${question}` },
  ];
}

/** Toy-policy answers: two right (one padded), three wrong ways (see docs/WRITING_ENVS.md). */
export function gsm8kSimulate(item: Gsm8kItem): SimulatedItem {
  const steps = "Let me work through the problem step by step.";
  const boxed = (answer: string, padding = "") =>
    `${steps}${padding} The result is ${answer}.\n\\boxed{${answer}}`;
  const gold = Number(item.gold);
  const off = Number.isFinite(gold) ? String(gold + 1) : `${item.gold}1`;
  const numbers = (item.question.match(/\d+(?:\.\d+)?/g) ?? []).map(Number);
  const sum = String(numbers.reduce((a, b) => a + b, 0));
  return {
    match: item.question,
    candidates: [
      { text: boxed(item.gold), label: "correct" },
      {
        text: boxed(item.gold, " Let me double-check the arithmetic.".repeat(3)),
        label: "correct_verbose",
      },
      { text: boxed(off), label: "off_by_one" },
      { text: boxed(sum), label: "sum_of_numbers" },
      { text: `${steps} The result is ${item.gold}.`, label: "no_boxed_answer" },
    ],
  };
}

export class Gsm8kLiteEnv extends BaseEnv<Gsm8kItem, Gsm8kLiteConfig> {
  static override envName = "gsm8k_lite";
  private train: Gsm8kItem[] = [];
  /** Curriculum level of each training problem (by index in `train`). */
  private tiers: number[] = [];
  readonly curriculum: Curriculum = new Curriculum({
    levels: this.config.curriculum_levels,
    window: this.config.curriculum_window,
    advance_threshold: this.config.curriculum_advance_threshold,
    fallback_threshold: this.config.curriculum_fallback_threshold,
  });
  private test: Gsm8kItem[] = [];
  private order: number[] = [];
  private iter = 0;
  private epoch = 0;
  private datasetText: string | null = null;
  private readonly accuracy = new AccuracyReward();

  /** Use dataset text the runtime already has (e.g. an R2 object) instead of bundled/URL data. */
  useDatasetText(text: string): void {
    this.datasetText = text;
  }

  override async setup(): Promise<void> {
    let text = this.datasetText ?? GSM8K_LITE_JSONL;
    if (!this.datasetText && this.config.dataset_url) {
      const res = await fetch(this.config.dataset_url);
      if (!res.ok) throw new Error(`dataset_url: HTTP ${res.status}`);
      text = await res.text();
    }
    const all = parseGsm8kJsonl(text);
    const evalSize = Math.min(this.config.eval_size, Math.floor(all.length / 2));
    this.train = all.slice(0, all.length - evalSize);
    this.test = all.slice(all.length - evalSize);
    // Longer questions are harder: rank by length, cut into equal-sized levels.
    const levels = this.config.curriculum_levels;
    const byLength = this.train.map((_, i) => i);
    byLength.sort(
      (a, b) => this.train[a]!.question.length - this.train[b]!.question.length || a - b,
    );
    this.tiers = new Array<number>(this.train.length);
    byLength.forEach((index, rank) => {
      this.tiers[index] = Math.floor((rank * levels) / this.train.length) + 1;
    });
    this.reshuffle();
  }

  private reshuffle(): void {
    const rng = new SeededRng(this.config.shuffle_seed * 7919 + this.epoch);
    this.order = rng.shuffle(this.train.map((_, i) => i));
  }

  override async getNextItem(): Promise<Gsm8kItem | null> {
    if (this.train.length === 0) return null;
    // At most two passes: level 1 always has problems, so one is found.
    for (let tries = 0; tries < 2 * this.order.length; tries++) {
      if (this.iter >= this.order.length) {
        this.iter = 0;
        this.epoch++;
        this.reshuffle();
      }
      const index = this.order[this.iter++]!;
      if (this.config.curriculum_levels === 1) return this.train[index]!;
      const level = this.tiers[index]!;
      if (level <= this.curriculum.level) return { ...this.train[index]!, level };
    }
    return null;
  }

  override recordScores(item: Gsm8kItem, scores: number[]): void {
    if (this.config.curriculum_levels === 1 || scores.length === 0) return;
    this.curriculum.record(item.level ?? 1, scores.reduce((a, b) => a + b, 0) / scores.length);
    this.observe("curriculum/level", this.curriculum.level);
  }

  override async collectTrajectories(
    item: Gsm8kItem,
  ): Promise<[ScoredDataGroup | null, Gsm8kItem[]]> {
    const choices = await sampleChat(this.inference, this.tokenizer, gsm8kMessages(item.question), {
      n: this.config.group_size,
      max_tokens: this.config.max_token_length,
      temperature: this.config.temperature,
    });
    const items = choices.map((c) => {
      const correct = this.accuracy.score(c.text, item.gold);
      this.observe("train/percent_correct", correct ? 1 : 0);
      return scoredItemFromNode(c.node, correct ? 1 : -1, {
        tokenizer: this.tokenizer,
        messages: c.messages,
      });
    });
    const lengths = items.map((it) => it.masks.filter((m) => m !== -100).length);
    const scores = applyLengthPenaltyIfAllCorrect(
      items.map((it) => it.scores),
      lengths,
      this.config.max_token_length,
    );
    const group = mergeIntoGroup(items);
    group.scores = scores;
    return [group, []];
  }

  /**
   * Held-out problems, eval_samples_per_item samples each (greedy for one sample, the training
   * temperature for several): eval/percent_correct (Atropos' name, = avg@k), avg@k and pass@j.
   */
  override async evaluateWithSamples(): Promise<EvalResult> {
    const k = this.config.eval_samples_per_item;
    const result = await this.evaluateSampled(this.test, async (item) => {
      const res = await this.inference.chatCompletion({
        messages: gsm8kMessages(item.question),
        n: 1,
        temperature: k === 1 ? 0 : this.config.temperature,
        max_tokens: this.config.max_token_length,
        split: "eval",
      });
      const response = res.choices[0]?.message.content ?? "";
      const correct = this.accuracy.score(response, item.gold);
      return {
        correct,
        record: { id: item.id, question: item.question, gold: item.gold, response },
      };
    });
    const avg = result.metrics[`eval/avg@${k}`];
    return {
      metrics: { "eval/percent_correct": avg ?? 0, ...result.metrics },
      samples: result.samples,
    };
  }

  override saveCheckpoint(): JsonObject {
    return { iter: this.iter, epoch: this.epoch, curriculum: this.curriculum.checkpoint() };
  }

  override loadCheckpoint(state: JsonObject): void {
    this.iter = Number(state.iter ?? 0);
    this.epoch = Number(state.epoch ?? 0);
    const curriculum = state.curriculum;
    if (curriculum && typeof curriculum === "object" && !Array.isArray(curriculum)) {
      this.curriculum.restore(curriculum);
    }
    if (this.train.length > 0) this.reshuffle();
  }
}

export default defineEnv(
  Gsm8kLiteEnv,
  Gsm8kLiteConfigSchema,
  "GSM8K-style math word problems, boxed-answer accuracy (+1/−1)",
  {
    simulate: gsm8kSimulate,
  },
);
