/**
 * Staleness bound of a lease: which policy versions a trainer still accepts, and what a 204 says
 * when the groups that would have formed a batch were too old.
 */

/** Oldest policy version a lease with `maxStaleness` accepts (null: no bound). */
export function minAcceptedVersion(
  currentVersion: number,
  maxStaleness: number | null,
): number | null {
  return maxStaleness === null ? null : currentVersion - maxStaleness;
}

export interface StaleEviction {
  /** Groups moved out of the queue by this lease. */
  evictedNow: number;
  /** Groups of the run out of the queue as stale so far (this lease's included). */
  staleTotal: number;
  currentVersion: number;
  maxStaleness: number;
}

/** A 204 reason that names staleness when stale groups were set aside. */
export function reasonWithStaleness(reason: string, eviction: StaleEviction | null): string {
  if (eviction === null || eviction.staleTotal === 0) return reason;
  const bound = eviction.currentVersion - eviction.maxStaleness;
  const now =
    eviction.evictedNow > 0
      ? `${eviction.evictedNow} queued group(s) sampled before policy version ${bound} were evicted as stale by this lease`
      : "no queued group was too stale for this lease";
  return `${reason}; staleness: max_staleness ${eviction.maxStaleness} at policy version ${eviction.currentVersion} accepts versions >= ${bound}; ${now} (${eviction.staleTotal} stale in total, GET /v1/runs/{run}/groups?status=stale lists them)`;
}
