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

const CHARGE_BYTES = `
INSERT INTO token_usage (token_id, day, bytes) SELECT ?1, ?2, ?3 WHERE ?3 <= ?4
ON CONFLICT (token_id, day) DO UPDATE SET bytes = bytes + excluded.bytes
  WHERE token_usage.bytes + excluded.bytes <= ?4
RETURNING bytes`;

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
    const row = await c.env.DB.prepare(
      "SELECT bytes FROM token_usage WHERE token_id = ?1 AND day = ?2",
    )
      .bind(token.id, day)
      .first<{ bytes: number }>();
    if ((row?.bytes ?? 0) + declared <= quota) return;
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
  const row = await c.env.DB.prepare(CHARGE_BYTES)
    .bind(token.id, day, bytes, token.bytesPerDay)
    .first<{ bytes: number }>();
  if (row) return;
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

/**
 * Refuses (429) an inference-proxy call once the caller's token has used its proxy_tokens_per_day
 * (prompt + completion tokens per UTC day). A call is checked before it is forwarded and charged
 * after, so the call that crosses the quota completes and the next one is refused.
 */
export async function checkProxyTokens(c: AppContext, now = Date.now()): Promise<void> {
  const token = proxyQuotaToken(c);
  if (!token) return;
  const day = new Date(now).toISOString().slice(0, 10);
  const row = await c.env.DB.prepare(
    "SELECT proxy_tokens FROM token_usage WHERE token_id = ?1 AND day = ?2",
  )
    .bind(token.id, day)
    .first<{ proxy_tokens: number }>();
  const used = row?.proxy_tokens ?? 0;
  if (used < token.proxyTokensPerDay) return;
  const retryAfter = retryAfterDay(day, now);
  throw new ApiError(
    "TOO_MANY_REQUESTS",
    `token '${token.name}' is over its proxy_tokens_per_day quota (${token.proxyTokensPerDay} inference-proxy tokens per UTC day, prompt + completion; ${used} used today); retry after ${retryAfter} s`,
    undefined,
    { "Retry-After": String(retryAfter) },
  );
}

/** Counts a forwarded call's prompt + completion tokens against the caller's quota. */
export async function chargeProxyTokens(
  c: AppContext,
  tokens: number,
  now = Date.now(),
): Promise<void> {
  const token = proxyQuotaToken(c);
  if (!token || tokens <= 0) return;
  const day = new Date(now).toISOString().slice(0, 10);
  await c.env.DB.prepare(
    `INSERT INTO token_usage (token_id, day, bytes, proxy_tokens) VALUES (?1, ?2, 0, ?3)
     ON CONFLICT (token_id, day) DO UPDATE SET proxy_tokens = proxy_tokens + excluded.proxy_tokens`,
  )
    .bind(token.id, day, tokens)
    .run();
}
