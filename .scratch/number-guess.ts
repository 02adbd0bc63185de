import {
  defineEnv,
  type EpisodeStart,
  MultiTurnEnv,
  mergeIntoGroup,
  SeededRng,
  type SimCandidate,
  scoredItemFromNode,
  Toolbox,
  ToolEnvConfigSchema,
  z,
} from "atropos-edge";

const ConfigSchema = ToolEnvConfigSchema.extend({ max_turns: z.number().int().default(6) });
type Config = z.output<typeof ConfigSchema>;
type Item = { secret: number };
type State = { secret: number };
const INTRO = "Find my secret number between 1 and 16 with the guess tool,";

class NumberGuessEnv extends MultiTurnEnv<Item, Config, State> {
  static override envName = "number_guess";
  private rng = new SeededRng(7);

  override async getNextItem(): Promise<Item> {
    return { secret: this.rng.int(1, 16) };
  }

  protected override maxTurns() {
    return this.config.max_turns;
  }

  /** The first messages, the episode's state and its tools; the base runs the loop. */
  protected override setupEpisode(item: Item): EpisodeStart<State> {
    const toolbox = new Toolbox({
      guess: {
        timeoutMs: 1000,
        definition: {
          type: "function",
          function: {
            name: "guess",
            description: "Guess the number: answers higher, lower or correct.",
            parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
          },
        },
        run: ({ n }) => {
          const g = Number(n);
          return g === item.secret ? "correct" : g < item.secret ? "higher" : "lower";
        },
      },
    });
    const ask = `${INTRO} then give it in <answer></answer> tags.`;
    return { messages: [{ role: "user", content: ask }], state: item, toolbox };
  }

  override async collectTrajectories(item: Item) {
    const episodes = await Promise.all(
      Array.from({ length: this.config.group_size }, (_, i) => this.rollout(item, i)),
    );
    const rollouts = episodes.map((e) => {
      const answer = /<answer>\s*(\d+)\s*<\/answer>/.exec(e.turns.at(-1)?.reply.text ?? "");
      // Right answers score more the fewer turns they took.
      const score = Number(answer?.[1]) === item.secret ? 1 - 0.1 * e.turns.length : 0;
      return scoredItemFromNode(e.node, score, { tokenizer: this.tokenizer, messages: e.messages });
    });
    return [mergeIntoGroup(rollouts), []] as const satisfies [unknown, Item[]];
  }
}

/** The simulator's choices so far: bisect (good) or count up (slow); then answer. */
function guessCandidates(prompt: string): SimCandidate[] {
  const guesses = [...prompt.matchAll(/"n":\s*(\d+)|\bn=(\d+)/g)].map((m) => Number(m[1] ?? m[2]));
  const results = [...prompt.matchAll(/guess result: "?(\w+)/g)].map((m) => m[1]);
  let [lo, hi] = [1, 16];
  guesses.forEach((g, i) => {
    if (results[i] === "higher") lo = g + 1;
    if (results[i] === "lower") hi = g - 1;
    if (results[i] === "correct") lo = hi = g;
  });
  if (results.at(-1) === "correct")
    return [{ text: `It is ${lo}.\n<answer>${lo}</answer>`, label: "answer" }];
  const call = (n: number) => `<tool_call>{"name": "guess", "arguments": {"n": ${n}}}</tool_call>`;
  return [
    { text: call(Math.floor((lo + hi) / 2)), label: "bisect" },
    { text: call(lo), label: "count_up" },
  ];
}

export default defineEnv(NumberGuessEnv, ConfigSchema, "Find a number with a guess tool", {
  simulate: () => ({ match: INTRO, candidates: guessCandidates }),
});
