/**
 * Per-token usage per UTC day (`token_usage`): bytes of submissions and inference-proxy tokens,
 * the counters the quotas middleware checks.
 */
import { and, eq } from "drizzle-orm";
import { db } from "./runs";
import { tokenUsage } from "./schema";

/** What a token has used on `day` (zeros when it has no row yet). */
export async function usageOf(
  d1: D1Database,
  tokenId: string,
  day: string,
): Promise<{ bytes: number; proxyTokens: number }> {
  const rows = await db(d1)
    .select({ bytes: tokenUsage.bytes, proxyTokens: tokenUsage.proxyTokens })
    .from(tokenUsage)
    .where(and(eq(tokenUsage.tokenId, tokenId), eq(tokenUsage.day, day)))
    .limit(1);
  return rows[0] ?? { bytes: 0, proxyTokens: 0 };
}

// Raw SQL: the insert is conditional (`SELECT … WHERE`) and so is the conflict update, which
// drizzle's builder cannot say; the quota holds across isolates in one statement.
const CHARGE_BYTES = `
INSERT INTO token_usage (token_id, day, bytes) SELECT ?1, ?2, ?3 WHERE ?3 <= ?4
ON CONFLICT (token_id, day) DO UPDATE SET bytes = bytes + excluded.bytes
  WHERE token_usage.bytes + excluded.bytes <= ?4
RETURNING bytes`;

/** Adds `bytes` to the token's day while the total stays within `quota`; false when it would not. */
export async function chargeBytesWithin(
  d1: D1Database,
  tokenId: string,
  day: string,
  bytes: number,
  quota: number,
): Promise<boolean> {
  const { results } = await d1.prepare(CHARGE_BYTES).bind(tokenId, day, bytes, quota).all();
  return results.length > 0;
}

// The inference-proxy side of the row (proxy_tokens): a call's tokens are reserved before it is
// forwarded and settled to what it used after. Raw SQL: the conditional upsert below is one
// statement (two calls can never both fit into the same room), which the builder cannot say.

export interface ProxyUsageKey {
  tokenId: string;
  /** UTC day, YYYY-MM-DD. */
  day: string;
}

/** Tokens counted for the token on the day (reservations in flight included). */
export async function proxyTokensUsed(d1: D1Database, key: ProxyUsageKey): Promise<number> {
  const { proxyTokens } = await usageOf(d1, key.tokenId, key.day);
  return proxyTokens;
}

// One statement, so two calls can never both fit into the same room under the quota.
const RESERVE = `
INSERT INTO token_usage (token_id, day, bytes, proxy_tokens) SELECT ?1, ?2, 0, ?3 WHERE ?3 <= ?4
ON CONFLICT (token_id, day) DO UPDATE SET proxy_tokens = proxy_tokens + excluded.proxy_tokens
  WHERE token_usage.proxy_tokens + excluded.proxy_tokens <= ?4
RETURNING proxy_tokens`;

/** Adds `tokens` to the day's count if the total stays within `quota`; false when it would not. */
export async function reserveProxyTokens(
  db: D1Database,
  key: ProxyUsageKey,
  tokens: number,
  quota: number,
): Promise<boolean> {
  const row = await db.prepare(RESERVE).bind(key.tokenId, key.day, tokens, quota).first();
  return row !== null;
}

/** Replaces a reservation of `reserved` tokens by the `used` tokens the call really took. */
export async function settleProxyTokens(
  db: D1Database,
  key: ProxyUsageKey,
  reserved: number,
  used: number,
): Promise<void> {
  await db
    .prepare(
      "UPDATE token_usage SET proxy_tokens = MAX(0, proxy_tokens - ?3 + ?4) WHERE token_id = ?1 AND day = ?2",
    )
    .bind(key.tokenId, key.day, reserved, used)
    .run();
}
