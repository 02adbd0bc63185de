/** Plays blackjack turns: basic strategy with probability correctProbability, else the opposite. */
import { BLACKJACK_INTRO } from "../../env-workers/envs/blackjack";
import type { Responder } from "./types";

const STATE = /\(total (\d+)\)\. Dealer shows: (\w+)\./g;

export function basicStrategy(total: number, dealerCard: string): "hit" | "stand" {
  const dealer =
    dealerCard === "A" ? 11 : ["J", "Q", "K"].includes(dealerCard) ? 10 : Number(dealerCard);
  if (total <= 11) return "hit";
  if (total >= 17) return "stand";
  return dealer >= 7 ? "hit" : "stand";
}

export const blackjackResponder: Responder = {
  name: "blackjack",
  matches: (promptText) => promptText.includes(BLACKJACK_INTRO),
  respond: (ctx) => {
    const last = [...ctx.promptText.matchAll(STATE)].at(-1);
    const best = basicStrategy(Number(last?.[1] ?? 12), last?.[2] ?? "10");
    const correct = ctx.rng() < ctx.correctProbability;
    return correct ? best : best === "hit" ? "stand" : "hit";
  },
};
