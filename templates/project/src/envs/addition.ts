/**
 * An example env: add two numbers. Copy it to start your own: items from getNextItem(), rollouts
 * sampled through the ManagedServer (exact tokens and logprobs), a reward, a checkpoint, and
 * `simulate` so that the local simulator can play a policy for it without a GPU.
 */
import {
  BaseEnv,
  BaseEnvConfigSchema,
  defineEnv,
  type JsonObject,
  mergeIntoGroup,
  SeededRng,
  sampleChat,
  scoredItemFromNode,
  z,
} from "atropos-edge";

const AdditionConfigSchema = BaseEnvConfigSchema.extend({
  /** Largest operand. */
  max_operand: z.number().int().positive().default(99),
});
type AdditionConfig = z.output<typeof AdditionConfigSchema>;
type Item = { a: number; b: number };

export function question(item: Item): string {
  return `What is ${item.a} + ${item.b}? Reply with the number only.`;
}

/** 1 when the last integer in the answer is the sum, else 0. */
export function scoreAnswer(item: Item, answer: string): number {
  const numbers = answer.match(/-?\d+/g);
  return numbers && Number(numbers[numbers.length - 1]) === item.a + item.b ? 1 : 0;
}

export class AdditionEnv extends BaseEnv<Item, AdditionConfig> {
  static override envName = "addition";
  private rng = new SeededRng(1);

  override async getNextItem(): Promise<Item> {
    const max = this.config.max_operand;
    return { a: this.rng.int(0, max), b: this.rng.int(0, max) };
  }

  override async collectTrajectories(item: Item) {
    const messages = [{ role: "user", content: question(item) }];
    const choices = await sampleChat(this.inference, this.tokenizer, messages, {
      n: this.config.group_size,
      max_tokens: 16,
      temperature: 1.0,
    });
    const rollouts = choices.map((choice) =>
      scoredItemFromNode(choice.node, scoreAnswer(item, choice.text), {
        tokenizer: this.tokenizer,
        messages: choice.messages,
      }),
    );
    return [mergeIntoGroup(rollouts), []] as const satisfies [unknown, Item[]];
  }

  override saveCheckpoint(): JsonObject {
    return { rng: this.rng.state };
  }

  override loadCheckpoint(state: JsonObject): void {
    if (typeof state.rng === "number") this.rng = new SeededRng(state.rng);
  }
}

export default defineEnv(AdditionEnv, AdditionConfigSchema, "Add two numbers (example env)", {
  // What a simulated policy may answer: one right answer, two typical mistakes.
  simulate: (item: Item) => ({
    match: question(item),
    candidates: [
      { text: String(item.a + item.b), label: "correct" },
      { text: String(item.a + item.b + 1), label: "off_by_one" },
      { text: `${item.a}${item.b}`, label: "concatenated" },
    ],
  }),
});
