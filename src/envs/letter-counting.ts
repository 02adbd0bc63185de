import {
  BaseEnv,
  BaseEnvConfigSchema,
  Curriculum,
  defineEnv,
  type EvalResult,
  type JsonObject,
  mergeIntoGroup,
  type ScoredDataGroup,
  SeededRng,
  type SimulatedItem,
  sampleChat,
  scoredItemFromNode,
  z,
} from "../sdk/env";
/**
 * letter_counting: "how many times does letter L appear in S?" with a curriculum. Level k draws
 * longer strings with fewer distinct letters (more repeats); the level advances when the mean
 * score of the last `curriculum_window` groups at the current level reaches `advance_threshold`,
 * and falls back one level when it drops below `fallback_threshold` (when set).
 * Level, window and RNG state are all in the checkpoint, and recordScores() only touches them,
 * so feedback from another isolate (queue consumer → EnvSession DO) works.
 */

export const LETTER_PROMPT_PREFIX = "Count the letters.";

export const LetterCountingConfigSchema = BaseEnvConfigSchema.extend({
  seed: z.number().int().default(1),
  start_level: z.number().int().min(1).default(1),
  max_level: z.number().int().min(1).default(10),
  curriculum_window: z.number().int().positive().default(8),
  advance_threshold: z.number().min(0).max(1).default(0.8),
  fallback_threshold: z.number().min(0).max(1).nullable().default(null),
  temperature: z.number().min(0).default(1.0),
  /** Held-out items evaluate() asks (their own seed), at `eval_level`. */
  eval_size: z.number().int().min(0).default(16),
  eval_level: z.number().int().min(1).default(3),
});
export type LetterCountingConfig = z.output<typeof LetterCountingConfigSchema>;

export type LetterItem = { text: string; letter: string; count: number; level: number };

export function letterPrompt(text: string, letter: string): string {
  return `${LETTER_PROMPT_PREFIX} How many times does the letter '${letter}' appear in the string "${text}"? Give the final count inside <answer></answer> tags.`;
}

/** 1 when the last <answer> holds exactly the right integer, else 0. */
export function scoreLetterAnswer(response: string, count: number): number {
  const visible = response.replace(/<think>[\s\S]*?<\/think>/g, "");
  const answers = [...visible.matchAll(/<answer>\s*([\s\S]*?)\s*<\/answer>/gi)];
  const last = answers.at(-1)?.[1];
  return last !== undefined && /^\d+$/.test(last) && Number(last) === count ? 1 : 0;
}

/** Toy-policy answers: the right count, off by one either way, untagged, the string length. */
export function letterCountingSimulate(item: LetterItem): SimulatedItem {
  const reply = (n: number) =>
    `I go through "${item.text}" one character at a time and count '${item.letter}'.\n<answer>${n}</answer>`;
  return {
    match: `the letter '${item.letter}' appear in the string "${item.text}"`,
    candidates: [
      { text: reply(item.count), label: "correct" },
      { text: reply(item.count + 1), label: "one_too_many" },
      {
        text: reply(Math.max(0, item.count - 1) === item.count ? item.count + 2 : item.count - 1),
        label: "one_too_few",
      },
      { text: `The letter appears ${item.count} times.`, label: "no_answer_tags" },
      { text: reply(item.text.length), label: "string_length" },
    ],
  };
}

/** One item at `level`, drawn from `rng`. */
export function drawLetterItem(rng: SeededRng, level: number): LetterItem {
  const { length, alphabet } = levelShape(level);
  const letters = "abcdefghijklmnopqrstuvwxyz".slice(0, alphabet);
  let text = "";
  for (let i = 0; i < length; i++) text += letters[rng.int(0, letters.length - 1)];
  const letter = letters[rng.int(0, letters.length - 1)]!;
  const count = [...text].filter((c) => c === letter).length;
  return { text, letter, count, level };
}

/** String length and alphabet size for a level. */
export function levelShape(level: number): { length: number; alphabet: number } {
  return { length: 4 + 3 * level, alphabet: Math.max(3, 14 - level) };
}

export class LetterCountingEnv extends BaseEnv<LetterItem, LetterCountingConfig> {
  static override envName = "letter_counting";
  readonly curriculum: Curriculum;
  private rng: SeededRng;

  constructor(...args: ConstructorParameters<typeof BaseEnv<LetterItem, LetterCountingConfig>>) {
    super(...args);
    this.curriculum = new Curriculum({
      levels: this.config.max_level,
      start_level: Math.min(this.config.start_level, this.config.max_level),
      window: this.config.curriculum_window,
      advance_threshold: this.config.advance_threshold,
      fallback_threshold: this.config.fallback_threshold,
    });
    this.rng = new SeededRng(this.config.seed);
  }

  get level(): number {
    return this.curriculum.level;
  }

  override async getNextItem(): Promise<LetterItem> {
    return drawLetterItem(this.rng, this.level);
  }

  /**
   * eval_size held-out items at eval_level (a fixed set, so the curve is comparable across
   * steps whatever the curriculum level), eval_samples_per_item samples each (greedy for one):
   * eval/avg@k and eval/pass@j.
   */
  override async evaluateWithSamples(): Promise<EvalResult> {
    const rng = new SeededRng(this.config.seed + 1_000_003);
    const items = Array.from({ length: this.config.eval_size }, () =>
      drawLetterItem(rng, this.config.eval_level),
    );
    const k = this.config.eval_samples_per_item;
    return this.evaluateSampled(items, async (item) => {
      const res = await this.inference.chatCompletion({
        messages: [{ role: "user", content: letterPrompt(item.text, item.letter) }],
        n: 1,
        temperature: k === 1 ? 0 : this.config.temperature,
        max_tokens: this.config.max_token_length,
        split: "eval",
      });
      const response = res.choices[0]?.message.content ?? "";
      return {
        correct: scoreLetterAnswer(response, item.count) === 1,
        record: { text: item.text, letter: item.letter, count: item.count, response },
      };
    });
  }

  override async collectTrajectories(
    item: LetterItem,
  ): Promise<[ScoredDataGroup | null, LetterItem[]]> {
    const messages = [{ role: "user", content: letterPrompt(item.text, item.letter) }];
    const choices = await sampleChat(this.inference, this.tokenizer, messages, {
      n: this.config.group_size,
      max_tokens: this.config.max_token_length,
      temperature: this.config.temperature,
    });
    const items = choices.map((c) =>
      scoredItemFromNode(c.node, scoreLetterAnswer(c.text, item.count), {
        tokenizer: this.tokenizer,
        messages: c.messages,
      }),
    );
    return [mergeIntoGroup(items), []];
  }

  override recordScores(item: LetterItem, scores: number[]): void {
    if (scores.length === 0) return;
    this.curriculum.record(item.level, scores.reduce((a, b) => a + b, 0) / scores.length);
    this.observe("curriculum/level", this.level);
  }

  override saveCheckpoint(): JsonObject {
    return { ...this.curriculum.checkpoint(), rng_state: this.rng.state };
  }

  override loadCheckpoint(state: JsonObject): void {
    this.curriculum.restore(state);
    if (typeof state.rng_state === "number") this.rng.state = state.rng_state;
  }
}

export default defineEnv(
  LetterCountingEnv,
  LetterCountingConfigSchema,
  "Count a letter in a string; 10-level curriculum",
  {
    simulate: letterCountingSimulate,
  },
);
