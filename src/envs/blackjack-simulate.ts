/**
 * How the simulator's toy policy plays blackjack (kept apart from blackjack.ts, which holds the
 * game): each turn it chooses between basic strategy and the opposite move.
 */
import type { SimCandidate, SimulatedItem } from "../sdk/env";
import { BLACKJACK_INTRO, type BlackjackItem } from "./blackjack";

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
