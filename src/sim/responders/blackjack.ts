/** Plays blackjack turns: basic strategy with probability correctProbability, else the opposite. */

import { BLACKJACK_INTRO, blackjackCandidates } from "../../envs/blackjack";
import type { Responder } from "./types";

export { basicStrategy } from "../../envs/blackjack";

export const blackjackResponder: Responder = {
  name: "blackjack",
  matches: (promptText) => promptText.includes(BLACKJACK_INTRO),
  respond: (ctx) => {
    const [best, other] = blackjackCandidates(ctx.promptText);
    return (ctx.rng() < ctx.correctProbability ? best : other)!.text;
  },
};
