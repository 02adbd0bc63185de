/**
 * Per-token usage per UTC day (`token_usage`): bytes of submissions and inference-proxy tokens,
 * the counters the quotas middleware checks.
 */
import { and, eq, sql } from "drizzle-orm";
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

/** Adds `tokens` inference-proxy tokens to the token's day. */
export async function addProxyTokens(
  d1: D1Database,
  tokenId: string,
  day: string,
  tokens: number,
): Promise<void> {
  await db(d1)
    .insert(tokenUsage)
    .values({ tokenId, day, bytes: 0, proxyTokens: tokens })
    .onConflictDoUpdate({
      target: [tokenUsage.tokenId, tokenUsage.day],
      set: { proxyTokens: sql`${tokenUsage.proxyTokens} + excluded.proxy_tokens` },
    });
}
