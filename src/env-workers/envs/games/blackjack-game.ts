/** Pure blackjack: a seeded shuffled deck, player hits/stands, dealer draws to 17. */
import { SeededRng } from "../../../core/rng";

export type Card = "A" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9" | "10" | "J" | "Q" | "K";
const RANKS: Card[] = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];

export function shuffledDeck(seed: number): Card[] {
  const deck = RANKS.flatMap((r) => [r, r, r, r]);
  return new SeededRng(seed).shuffle(deck);
}

/** Best total ≤ 21 counting aces as 11 where possible. */
export function handTotal(cards: readonly Card[]): number {
  let total = 0;
  let aces = 0;
  for (const c of cards) {
    if (c === "A") {
      aces++;
      total += 11;
    } else total += c === "J" || c === "Q" || c === "K" ? 10 : Number(c);
  }
  while (total > 21 && aces > 0) {
    total -= 10;
    aces--;
  }
  return total;
}

export type Outcome = "win" | "loss" | "push";

export class BlackjackGame {
  readonly player: Card[];
  readonly dealer: Card[];
  private next = 4;
  done = false;
  outcome: Outcome | null = null;

  constructor(private readonly deck: Card[]) {
    this.player = [deck[0]!, deck[2]!];
    this.dealer = [deck[1]!, deck[3]!];
    if (handTotal(this.player) === 21) this.finish();
  }

  private draw(): Card {
    const card = this.deck[this.next++];
    if (!card) throw new Error("deck exhausted");
    return card;
  }

  hit(): Card {
    if (this.done) throw new Error("game is over");
    const card = this.draw();
    this.player.push(card);
    if (handTotal(this.player) > 21) {
      this.done = true;
      this.outcome = "loss";
    }
    return card;
  }

  stand(): void {
    if (this.done) throw new Error("game is over");
    this.finish();
  }

  private finish(): void {
    while (handTotal(this.dealer) < 17) this.dealer.push(this.draw());
    const p = handTotal(this.player);
    const d = handTotal(this.dealer);
    this.done = true;
    this.outcome = d > 21 || p > d ? "win" : p < d ? "loss" : "push";
  }

  reward(): number {
    return this.outcome === "win" ? 1 : this.outcome === "loss" ? -1 : 0;
  }
}
