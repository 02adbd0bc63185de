/**
 * The inference-proxy side of a token's daily usage row (token_usage.proxy_tokens): reserving a
 * call's tokens before it is forwarded and settling to what it used after.
 */

export interface ProxyUsageKey {
  tokenId: string;
  /** UTC day, YYYY-MM-DD. */
  day: string;
}

/** Tokens counted for the token on the day (reservations in flight included). */
export async function proxyTokensUsed(db: D1Database, key: ProxyUsageKey): Promise<number> {
  const row = await db
    .prepare("SELECT proxy_tokens FROM token_usage WHERE token_id = ?1 AND day = ?2")
    .bind(key.tokenId, key.day)
    .first<{ proxy_tokens: number }>();
  return row?.proxy_tokens ?? 0;
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
  const row = await db
    .prepare(RESERVE)
    .bind(key.tokenId, key.day, tokens, quota)
    .first<{ proxy_tokens: number }>();
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
