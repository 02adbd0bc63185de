import { SeededRng } from "../../sdk/env";
/**
 * Pure blackjack: a seeded shuffled deck, player hits/stands, dealer draws to 17. The player
 * always gets at least one decision (hands with a natural 21 are redealt).
 */

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
  private next = 0;
  done = false;
  outcome: Outcome | null = null;

  /**
   * A natural 21 would end the hand before the player acts, leaving no turn to train on, so such
   * a hand is set aside and the next four cards of the same deck are dealt: the deck alone still
   * fixes the game. Every natural holds an ace, so a full deck sets aside at most four hands.
   */
  constructor(private readonly deck: Card[]) {
    for (;;) {
      const [p1, d1, p2, d2] = [this.draw(), this.draw(), this.draw(), this.draw()];
      if (handTotal([p1, p2]) === 21) continue;
      this.player = [p1, p2];
      this.dealer = [d1, d2];
      return;
    }
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
