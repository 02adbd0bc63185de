/**
 * The clock that time-dependent state transitions read: the RunCoordinator (lease expiry, acks,
 * env staleness), ingest dedupe and the group commit. Production reads `Date.now()`; a test moves
 * time forward with `advanceClock` instead of sleeping (Workers tests share the Worker's isolate,
 * so setting it from `cloudflare:test` reaches the Durable Objects too).
 */
let offsetMs = 0;

/** Milliseconds since the epoch, as `Date.now()`, plus what tests advanced. */
export function now(): number {
  return Date.now() + offsetMs;
}

/** Tests: moves the clock forward by `ms` (as if that much time had passed). */
export function advanceClock(ms: number): void {
  if (!(ms >= 0)) throw new Error(`advanceClock needs ms ≥ 0, got ${ms}`);
  offsetMs += ms;
}

/** Tests: back to the wall clock (after a test that advanced it). */
export function resetClock(): void {
  offsetMs = 0;
}
