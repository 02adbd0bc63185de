/**
 * A responder decides what the simulated "policy" says for one kind of prompt.
 * The simulator is a test double: responders recognise the example environments'
 * prompts and answer correctly with a configurable probability.
 */
export interface ResponderContext {
  /** The rendered prompt (chat template applied) or the raw completion prompt. */
  promptText: string;
  /** Deterministic random source for this (prompt, seed, choice index). */
  rng: () => number;
  /** Probability that the answer is correct, 0..1. */
  correctProbability: number;
}

export interface Responder {
  name: string;
  matches(promptText: string): boolean;
  respond(ctx: ResponderContext): string;
}
