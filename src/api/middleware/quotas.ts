/**
 * Per-token quotas. Requests per second: a token bucket per token in this isolate's memory
 * (refilled at `rps_limit`, holding up to twice that), so the limit holds per isolate. Cloudflare
 * may run several isolates for one Worker, so a token can get up to that many times its rate;
 * a Durable Object per token would be exact at the price of a round trip on every request.
 */
import { ApiError } from "../errors";
import type { StoredToken } from "../storage/tokens";

interface Bucket {
  tokens: number;
  at: number;
}

const buckets = new Map<string, Bucket>();

/** Takes one request from the token's bucket, or refuses with 429 and Retry-After. */
export function checkRate(token: StoredToken, now = Date.now()): void {
  const rate = token.rpsLimit;
  if (rate === null || rate <= 0) return;
  const capacity = Math.max(1, rate * 2);
  const bucket = buckets.get(token.id) ?? { tokens: capacity, at: now };
  bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * rate);
  bucket.at = now;
  buckets.set(token.id, bucket);
  if (bucket.tokens < 1) {
    const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / rate));
    throw new ApiError(
      "TOO_MANY_REQUESTS",
      `token '${token.name}' is over its requests-per-second quota (${rate}/s); retry after ${retryAfter} s`,
      undefined,
      { "Retry-After": String(retryAfter) },
    );
  }
  bucket.tokens -= 1;
}
