export interface BackoffPolicy {
  maxAttempts: number;
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { maxAttempts: 3, baseMs: 1000, maxMs: 10_000 };

/** Exponential backoff with full jitter: uniform in [0, min(max, base × 2^(attempt−1))]. */
export function backoffDelayMs(
  policy: BackoffPolicy,
  attempt: number,
  random: () => number,
): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Splits n into chunks of at most `size` (10, 8 → [8, 2]). */
export function splitN(n: number, size: number): number[] {
  const chunks: number[] = [];
  for (let left = n; left > 0; left -= size) chunks.push(Math.min(size, left));
  return chunks.length > 0 ? chunks : [1];
}
