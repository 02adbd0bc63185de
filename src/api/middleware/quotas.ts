/**
 * Per-token quotas. Requests per second: a token bucket per token in this isolate's memory
 * (refilled at `rps_limit`, holding up to twice that), so the limit holds per isolate. Cloudflare
 * may run several isolates for one Worker, so a token can get up to that many times its rate;
 * a Durable Object per token would be exact at the price of a round trip on every request.
 * Bytes per day: a D1 row per token per UTC day, exact across isolates (one write per submission);
 * the same row counts inference-proxy tokens per day.
 */
import type { AppContext } from "../context";
import { ApiError } from "../errors";
import type { StoredToken } from "../storage/tokens";
import {
  chargeBytesWithin,
  proxyTokensUsed,
  reserveProxyTokens as reserveUsage,
  settleProxyTokens,
  usageOf,
} from "../storage/usage";

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

function utcDay(now: number): string {
  return new Date(now).toISOString().slice(0, 10);
}

function overBytesQuota(token: StoredToken, bytes: number, day: string, now: number): ApiError {
  const retryAfter = retryAfterDay(day, now);
  return new ApiError(
    "TOO_MANY_REQUESTS",
    `token '${token.name}' is over its bytes-per-day quota (${token.bytesPerDay} bytes of submissions per UTC day; this body is ${bytes}); retry after ${retryAfter} s`,
    undefined,
    { "Retry-After": String(retryAfter) },
  );
}

/**
 * Refuses a body before a byte of it is read when its declared length is more than the caller's
 * bytes-per-day quota has left today (429 naming the quota). Nothing is charged: what arrives is
 * charged by `chargeBytes`.
 */
export async function refuseDeclaredOverQuota(
  c: AppContext,
  declared: number,
  now = Date.now(),
): Promise<void> {
  const principal = c.get("principal");
  if (principal.kind !== "token" || principal.token.bytesPerDay === null) return;
  const { token } = principal;
  const quota = principal.token.bytesPerDay;
  const day = utcDay(now);
  if (declared <= quota) {
    const used = await usageOf(c.env.DB, token.id, day);
    if (used.bytes + declared <= quota) return;
  }
  throw overBytesQuota(token, declared, day, now);
}

/**
 * Counts `bytes` of submitted body against the caller's bytes-per-day quota (one D1 row per token
 * per UTC day, updated only while under the limit), or refuses with 429 until the next UTC day.
 */
export async function chargeBytes(c: AppContext, bytes: number, now = Date.now()): Promise<void> {
  const principal = c.get("principal");
  if (principal.kind !== "token" || principal.token.bytesPerDay === null) return;
  const { token } = principal;
  const day = utcDay(now);
  const quota = principal.token.bytesPerDay;
  if (await chargeBytesWithin(c.env.DB, token.id, day, bytes, quota)) return;
  throw overBytesQuota(token, bytes, day, now);
}

function retryAfterDay(day: string, now: number): number {
  return Math.ceil((Date.parse(`${day}T00:00:00Z`) + 86_400_000 - now) / 1000);
}

/** The caller's token when it has a proxy_tokens_per_day quota. */
function proxyQuotaToken(c: AppContext): (StoredToken & { proxyTokensPerDay: number }) | null {
  const principal = c.get("principal");
  if (principal.kind !== "token" || principal.token.proxyTokensPerDay === null) return null;
  return principal.token as StoredToken & { proxyTokensPerDay: number };
}

/** Completion tokens reserved for a proxy call that does not say `max_tokens`. */
export const DEFAULT_PROXY_RESERVE_TOKENS = 1024;

/** Tries to reserve a call's tokens before giving up as busy (each try sees what others took). */
const RESERVE_TRIES = 4;

/**
 * The most tokens a proxy call can use: its prompt (about 4 characters a token, an overestimate
 * for most tokenizers) plus `n` completions of `max_tokens` (or `max_completion_tokens`, or
 * DEFAULT_PROXY_RESERVE_TOKENS when the call sets neither).
 */
export function proxyCallWorstCase(body: Record<string, unknown>): number {
  const prompt = JSON.stringify(body.messages ?? body.prompt ?? "").length;
  const limit = [body.max_tokens, body.max_completion_tokens].find(
    (v): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0,
  );
  const n = typeof body.n === "number" && Number.isInteger(body.n) && body.n > 1 ? body.n : 1;
  return Math.ceil(prompt / 4) + n * Math.ceil(limit ?? DEFAULT_PROXY_RESERVE_TOKENS);
}

/** Hands a reservation back, charging what the call used instead (0 when it failed). */
export type SettleProxyTokens = (used: number) => Promise<void>;

/**
 * Reserves an inference-proxy call's tokens against the caller's proxy_tokens_per_day (prompt +
 * completion tokens per UTC day) before it is forwarded, atomically in D1, so calls sent at once
 * cannot all pass a check made before any of them is charged. The reservation is the call's worst
 * case (`proxyCallWorstCase`), or what is left of the quota when that is less: the call that
 * crosses the quota completes, and every call after it (or beside it) is refused with 429 until
 * the next UTC day. Returns the settle step, which the caller runs once the call is done.
 */
export async function reserveProxyTokens(
  c: AppContext,
  body: Record<string, unknown>,
  now = Date.now(),
): Promise<SettleProxyTokens> {
  const token = proxyQuotaToken(c);
  if (!token) return async () => {};
  const key = { tokenId: token.id, day: utcDay(now) };
  const quota = token.proxyTokensPerDay;
  const worst = Math.max(1, proxyCallWorstCase(body));
  let used = 0;
  for (let attempt = 0; attempt < RESERVE_TRIES; attempt++) {
    used = await proxyTokensUsed(c.env.DB, key);
    const reserve = Math.min(worst, quota - used);
    if (reserve <= 0) break;
    if (await reserveUsage(c.env.DB, key, reserve, quota)) {
      return (spent) => settleProxyTokens(c.env.DB, key, reserve, Math.max(0, spent));
    }
  }
  const retryAfter = retryAfterDay(key.day, now);
  throw new ApiError(
    "TOO_MANY_REQUESTS",
    `token '${token.name}' is over its proxy_tokens_per_day quota (${quota} inference-proxy tokens per UTC day, prompt + completion; ${used} used or reserved by calls in flight today); retry after ${retryAfter} s`,
    undefined,
    { "Retry-After": String(retryAfter) },
  );
}
