import {
  BaseEnv,
  BaseEnvConfigSchema,
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
 * sort_letters: "sort BKAD" → "ABDK". Built for a tiny model learning on a CPU (bench:real,
 * docs/BENCHMARKS.md): every letter is one token of even a 400-token vocabulary, the answer is a
 * function a 2-layer transformer can compute (which letters are present, in order — no position
 * arithmetic), and the space is large: 23^3 = 12,167 strings of 3 of 23 letters, so no constant
 * answer scores more than a percent and a run cannot memorize its way up — a training run sees a
 * few thousand of the 11,967 training strings, and the held-out ones are new to it, so held-out
 * accuracy rises only if the model learns the sorting rule. Every string of `length` letters is
 * in exactly one split: `eval_size` held-out strings (a fixed permutation, whatever the seed)
 * for evaluate(), the rest for training (getNextItem and the trainer's supervised warm start).
 */

/** A–Z less E, L and O, which the tiny tokenizer merges (ER, EN, HE, LL, " O"). */
export const SORT_ALPHABET = "ABCDFGHIJKMNPQRSTUVWXYZ";

export const SortLettersConfigSchema = BaseEnvConfigSchema.extend({
  seed: z.number().int().default(1),
  /** Letters per item. */
  length: z.number().int().min(2).max(6).default(3),
  /** Letters items are drawn from (each a single token in the bundled tokenizers). */
  alphabet: z.string().min(2).max(26).default(SORT_ALPHABET),
  temperature: z.number().min(0).default(1.0),
  /** Held-out strings evaluate() asks (greedy), never drawn for training. */
  eval_size: z.number().int().min(0).default(200),
});
export type SortLettersConfig = z.output<typeof SortLettersConfigSchema>;

export type SortItem = { letters: string; answer: string };

export function sortPrompt(letters: string): string {
  return `sort ${letters}`;
}

/** 1 when the reply (spaces trimmed) is exactly the letters in order, else 0. */
export function scoreSortAnswer(response: string, answer: string): number {
  return response.trim() === answer ? 1 : 0;
}

export function sortItem(letters: string): SortItem {
  return { letters, answer: [...letters].sort().join("") };
}

/** The held-out and training strings: all alphabet^length strings, split by a fixed permutation. */
export function sortSplits(config: Pick<SortLettersConfig, "length" | "alphabet" | "eval_size">): {
  eval: string[];
  train: string[];
} {
  const letters = [...new Set(config.alphabet)];
  const total = letters.length ** config.length;
  if (total > 1_000_000)
    throw new RangeError(
      `sort_letters: ${letters.length}^${config.length} strings are too many; shorten length or alphabet`,
    );
  if (config.eval_size >= total)
    throw new RangeError(
      `sort_letters: eval_size ${config.eval_size} leaves no training strings out of ${total}`,
    );
  const all = Array.from({ length: total }, (_, n) => {
    let s = "";
    for (let i = 0; i < config.length; i++) {
      s += letters[n % letters.length];
      n = Math.floor(n / letters.length);
    }
    return s;
  });
  new SeededRng(20_261_126).shuffle(all);
  return { eval: all.slice(0, config.eval_size), train: all.slice(config.eval_size) };
}

/** Toy-policy answers for the simulator: sorted, unsorted, reversed, one letter dropped. */
export function sortLettersSimulate(item: SortItem): SimulatedItem {
  return {
    match: sortPrompt(item.letters),
    candidates: [
      { text: item.answer, label: "correct" },
      { text: item.letters, label: "unsorted" },
      { text: [...item.answer].reverse().join(""), label: "reversed" },
      { text: item.answer.slice(1), label: "dropped_one" },
    ],
  };
}

export class SortLettersEnv extends BaseEnv<SortItem, SortLettersConfig> {
  static override envName = "sort_letters";
  private rng: SeededRng;
  private readonly splits: { eval: string[]; train: string[] };

  constructor(...args: ConstructorParameters<typeof BaseEnv<SortItem, SortLettersConfig>>) {
    super(...args);
    this.rng = new SeededRng(this.config.seed);
    this.splits = sortSplits(this.config);
  }

  /** The training strings (the trainer's supervised warm start reads them: bench:real). */
  get trainSplit(): readonly string[] {
    return this.splits.train;
  }

  get evalSplit(): readonly string[] {
    return this.splits.eval;
  }

  override async getNextItem(): Promise<SortItem> {
    return sortItem(this.rng.pick(this.splits.train));
  }

  /** Greedy (one sample per item unless eval_samples_per_item) on the held-out strings. */
  override async evaluateWithSamples(): Promise<EvalResult> {
    const k = this.config.eval_samples_per_item;
    return this.evaluateSampled(this.splits.eval.map(sortItem), async (item) => {
      const res = await this.inference.chatCompletion({
        messages: [{ role: "user", content: sortPrompt(item.letters) }],
        n: 1,
        temperature: k === 1 ? 0 : this.config.temperature,
        max_tokens: this.config.length + 2,
        split: "eval",
      });
      const response = res.choices[0]?.message.content ?? "";
      return {
        correct: scoreSortAnswer(response, item.answer) === 1,
        record: { letters: item.letters, answer: item.answer, response },
      };
    });
  }

  override async collectTrajectories(
    item: SortItem,
  ): Promise<[ScoredDataGroup | null, SortItem[]]> {
    const messages = [{ role: "user", content: sortPrompt(item.letters) }];
    const choices = await sampleChat(this.inference, this.tokenizer, messages, {
      n: this.config.group_size,
      // The answer and the end-of-turn token; a longer reply is wrong anyway.
      max_tokens: this.config.length + 2,
      temperature: this.config.temperature,
    });
    const items = choices.map((c) =>
      scoredItemFromNode(c.node, scoreSortAnswer(c.text, item.answer), {
        tokenizer: this.tokenizer,
        messages: c.messages,
      }),
    );
    return [mergeIntoGroup(items), []];
  }

  override saveCheckpoint(): JsonObject {
    return { rng_state: this.rng.state };
  }

  override loadCheckpoint(state: JsonObject): void {
    if (typeof state.rng_state === "number") this.rng.state = state.rng_state;
  }
}

export default defineEnv(
  SortLettersEnv,
  SortLettersConfigSchema,
  "Sort 3 of 23 letters (a rule a tiny model learns on a CPU; held-out split)",
  { simulate: sortLettersSimulate },
);
