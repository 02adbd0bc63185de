/** Reading sampled token ids and their logprobs out of the servers' answers. */
import { InferenceProtocolError } from "./http";

/** vLLM's `"token_id:<id>"` token strings (return_tokens_as_token_ids, /inference/v1/generate). */
export function placeholderTokenId(token: unknown): number | null {
  if (typeof token !== "string") return null;
  const match = /^token_id:(\d+)$/.exec(token);
  return match ? Number(match[1]) : null;
}

/**
 * The logprob of a sampled token. vLLM writes -9999.0 for a logprob it does not have (a clamped
 * -inf, or a chat step without the sampled id) and TRL null for a NaN: neither is data to train
 * on, so they fail the request (it is retried) rather than pass silently.
 */
export function sampledLogprob(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= -9999) {
    throw new InferenceProtocolError(
      `${what}: ${JSON.stringify(value)} is not a usable logprob of the sampled token`,
    );
  }
  return value;
}

export function tokenIdList(value: unknown, what: string): number[] {
  if (!Array.isArray(value) || !value.every((id) => Number.isInteger(id) && id >= 0)) {
    throw new InferenceProtocolError(`${what}: expected a list of token ids`);
  }
  return value as number[];
}

export function sameIds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}
