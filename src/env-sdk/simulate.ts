/**
 * How the local inference simulator's toy policy may answer an env's items. An env exports
 * `simulate(item)` (see defineEnv's options): the CLI registers its answer with the in-process
 * simulator before the env samples that item, so `npm start` can train without a GPU.
 */
import type { JsonValue } from "./base-env";

export interface SimCandidate {
  /** The full answer text the simulated policy may produce. */
  text: string;
  /**
   * The toy policy learns one logit per (env, label): answers that share a label share what
   * was learned across items (e.g. "correct", "off_by_one"). Defaults to the text itself.
   */
  label?: string;
}

export interface SimulatedItem {
  /** A substring of the prompt that identifies this item (e.g. the question text). */
  match: string;
  /**
   * Candidate answers, some good, some bad. A function of the rendered prompt for multi-turn
   * envs, whose right next message depends on the conversation so far.
   */
  candidates: SimCandidate[] | ((promptText: string) => SimCandidate[]);
}

export type SimulateFn<Item extends JsonValue = JsonValue> = (item: Item) => SimulatedItem;

/** Where the CLI sends registrations: the in-process simulator's toy policy. */
export interface SimulationSink {
  register(env: string, simulated: SimulatedItem): void;
}
