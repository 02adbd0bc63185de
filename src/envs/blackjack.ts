/**
 * blackjack: an interactive game over several turns. Every rollout of a group plays the same
 * seeded deck; each turn the model sees its hand and the dealer's up card and answers "hit" or
 * "stand". Episode reward: win +1, push 0, loss −1; an unreadable action ends the episode at −1.
 * MultiTurnEnv runs the loop (no tools: each reply is a move, `envResponse` plays it), so all
 * turns go through one ManagedServer and earlier assistant turns stay trainable.
 */

import {
  type AssistantTurn,
  type BaseEnv,
  BaseEnvConfigSchema,
  type ChatMessage,
  defineEnv,
  type EpisodeStart,
  type EvalResult,
  type JsonObject,
  MultiTurnEnv,
  mergeIntoGroup,
  type ScoredDataGroup,
  type ScoredDataItem,
  SeededRng,
  type SimCandidate,
  type SimulatedItem,
  scoredItemFromNode,
  z,
} from "../sdk/env";
import { BlackjackGame, handTotal, shuffledDeck } from "./games/blackjack-game";

export const BLACKJACK_INTRO = "Let's play blackjack.";

export const BlackjackConfigSchema = BaseEnvConfigSchema.extend({
  seed: z.number().int().default(21),
  max_turns: z.number().int().positive().default(6),
  temperature: z.number().min(0).default(1.0),
  max_tokens_per_turn: z.number().int().positive().default(64),
  /** Hands evaluate() plays (their own seed, never dealt for training). */
  eval_size: z.number().int().min(0).default(32),
});
export type BlackjackConfig = z.output<typeof BlackjackConfigSchema>;

export type BlackjackItem = { seed: number };

export function describeState(game: BlackjackGame): string {
  return `Your hand: ${game.player.join(", ")} (total ${handTotal(game.player)}). Dealer shows: ${game.dealer[0]}. Reply with exactly one word: hit or stand.`;
}

/** "hit" / "stand" from a reply (last occurrence wins), or null. */
export function parseAction(text: string): "hit" | "stand" | null {
  const visible = text.replace(/<think>[\s\S]*?<\/think>/g, "").toLowerCase();
  const matches = [...visible.matchAll(/\b(hit|stand)\b/g)];
  return (matches.at(-1)?.[1] as "hit" | "stand" | undefined) ?? null;
}

export interface BlackjackEpisode {
  actions: string[];
  outcome: string;
  reward: number;
  rollout: ScoredDataItem;
}

interface Hand {
  game: BlackjackGame;
  actions: string[];
  invalid: boolean;
}

export class BlackjackEnv extends MultiTurnEnv<BlackjackItem, BlackjackConfig, Hand> {
  static override envName = "blackjack";
  private rng: SeededRng;

  constructor(...args: ConstructorParameters<typeof BaseEnv<BlackjackItem, BlackjackConfig>>) {
    super(...args);
    this.rng = new SeededRng(this.config.seed);
  }

  override async getNextItem(): Promise<BlackjackItem> {
    return { seed: Math.floor(this.rng.next() * 2 ** 31) };
  }

  protected override setupEpisode(item: BlackjackItem): EpisodeStart<Hand> {
    const game = new BlackjackGame(shuffledDeck(item.seed));
    return {
      messages: [{ role: "user", content: `${BLACKJACK_INTRO} ${describeState(game)}` }],
      state: { game, actions: [], invalid: false },
    };
  }

  protected override maxTurns(): number {
    return this.config.max_turns;
  }

  protected override samplingParams() {
    return { max_tokens: this.config.max_tokens_per_turn, temperature: this.config.temperature };
  }

  protected override episodeSeed(item: BlackjackItem, episode: number): number {
    return item.seed + episode * 7919;
  }

  /** No tools: every reply is a move, played in envResponse. */
  protected override isDone(): boolean {
    return false;
  }

  /** Plays the move; the next state as a user turn, or null when the hand is over. */
  protected override envResponse(turn: AssistantTurn, hand: Hand): ChatMessage[] | null {
    const action = parseAction(turn.text);
    if (!action) {
      hand.invalid = true;
      return null;
    }
    hand.actions.push(action);
    if (action === "stand") hand.game.stand();
    else {
      const card = hand.game.hit();
      if (!hand.game.done)
        return [{ role: "user", content: `You drew ${card}. ${describeState(hand.game)}` }];
    }
    return hand.game.done ? null : [];
  }

  /**
   * `episode` varies the sampling seed so rollouts of one group differ; `observe`: record
   * training observations (off for evaluation hands).
   */
  async playEpisode(item: BlackjackItem, episode = 0, observe = true): Promise<BlackjackEpisode> {
    const e = await this.rollout(item, episode);
    const { game, actions, invalid } = e.state;
    if (!game.done && !invalid) game.stand(); // turn limit: the hand stands as is
    const reward = invalid ? -1 : game.reward();
    const outcome = invalid ? "invalid" : (game.outcome ?? "push");
    if (observe) this.observe("train/win", outcome === "win" ? 1 : 0);
    const rollout = scoredItemFromNode(e.node, reward, {
      tokenizer: this.tokenizer,
      messages: e.messages,
    });
    return { actions, outcome, reward, rollout };
  }

  override async collectTrajectories(
    item: BlackjackItem,
  ): Promise<[ScoredDataGroup | null, BlackjackItem[]]> {
    const episodes = await Promise.all(
      Array.from({ length: this.config.group_size }, (_, i) => this.playEpisode(item, i)),
    );
    return [mergeIntoGroup(episodes.map((e) => e.rollout)), []];
  }

  /**
   * eval_size held-out hands (a deck seed of their own), eval_samples_per_item plays each: a
   * play is correct when it wins. eval/avg@k (the win rate), eval/pass@j, eval/mean_reward.
   */
  override async evaluateWithSamples(): Promise<EvalResult> {
    const rng = new SeededRng(this.config.seed + 1_000_003);
    const hands = Array.from({ length: this.config.eval_size }, () => ({
      seed: Math.floor(rng.next() * 2 ** 31),
    }));
    const rewards: number[] = [];
    const result = await this.evaluateSampled(hands, async (hand, sample) => {
      const e = await this.playEpisode(hand, sample, false);
      rewards.push(e.reward);
      return {
        correct: e.outcome === "win",
        record: { seed: hand.seed, actions: e.actions, outcome: e.outcome, reward: e.reward },
      };
    });
    const mean = rewards.reduce((a, b) => a + b, 0) / Math.max(1, rewards.length);
    return { metrics: { ...result.metrics, "eval/mean_reward": mean }, samples: result.samples };
  }

  override saveCheckpoint(): JsonObject {
    return { rng_state: this.rng.state };
  }

  override loadCheckpoint(state: JsonObject): void {
    if (typeof state.rng_state === "number") this.rng.state = state.rng_state;
  }
}

// What a simulated policy may play (see docs/WRITING_ENVS.md, simulate).
const STATE = /\(total (\d+)\)\. Dealer shows: (\w+)\./g;

export function basicStrategy(total: number, dealerCard: string): "hit" | "stand" {
  const dealer =
    dealerCard === "A" ? 11 : ["J", "Q", "K"].includes(dealerCard) ? 10 : Number(dealerCard);
  if (total <= 11) return "hit";
  if (total >= 17) return "stand";
  return dealer >= 7 ? "hit" : "stand";
}

/** Basic strategy's move for the latest state in the conversation, then the other move. */
export function blackjackCandidates(promptText: string): SimCandidate[] {
  const last = [...promptText.matchAll(STATE)].at(-1);
  const best = basicStrategy(Number(last?.[1] ?? 12), last?.[2] ?? "10");
  const other = best === "hit" ? "stand" : "hit";
  return [
    { text: best, label: "basic_strategy" },
    { text: other, label: "against_basic_strategy" },
  ];
}

/** Every hand starts with the intro; the candidates depend only on the state in the prompt. */
export function blackjackSimulate(_item: BlackjackItem): SimulatedItem {
  return { match: BLACKJACK_INTRO, candidates: blackjackCandidates };
}

export default defineEnv(
  BlackjackEnv,
  BlackjackConfigSchema,
  "Multi-turn blackjack on a seeded deck (win/push/loss)",
  {
    simulate: blackjackSimulate,
  },
);
