/**
 * Group commit: submissions that arrive while a commit is being written wait and are then written
 * together, in one commit, by one of them. A lone submitter commits at once (no added latency);
 * under concurrency the per-commit costs (one R2 object, one D1 transaction) are shared.
 *
 * Workers specifics (why it is shaped like this):
 * - A waiter is never woken by another request: it polls its own slot on a short timer of its
 *   own, so everything it does afterwards (I/O included) runs in its own request's context.
 *   (Promise resolution across requests is handled by production workerd but not by every
 *   runtime this code meets, e.g. the vitest Workers pool.)
 * - Leadership passes to the oldest waiter after each commit, and a leader writes with its own
 *   bindings: no request's lifetime is stretched by other requests' work.
 * - The leader's commit is passed to `keepAlive` (ctx.waitUntil), so a client that disconnects
 *   mid-commit cannot strand the requests that joined it.
 * - If a leader still vanishes, the next submission takes over after `leaderTimeoutMs`, and each
 *   waiter gives up after `waitTimeoutMs` (its client retries; ingest dedupe makes that safe).
 */

import { now as clockNow } from "./clock";

export interface GroupCommitOptions<Item> {
  /** Most items in one commit. */
  maxItems: number;
  /** Most bytes in one commit (an item larger than this is committed alone). */
  maxBytes: number;
  sizeOf(item: Item): number;
  leaderTimeoutMs?: number;
  waitTimeoutMs?: number;
  /** How often a waiting submission looks at its slot. */
  pollMs?: number;
  /** Clock for leader takeover (default: core/clock's, which tests advance). */
  now?: () => number;
}

export interface CommitInfo {
  /** Items written by the commit this submission was part of (≥ its own). */
  items: number;
  /** Submissions (requests) that shared it. */
  submissions: number;
}

/** Writes `items` (all submissions' items, in order) and returns one result per item. */
export type CommitFn<Item, Result> = (items: Item[]) => Promise<Result[]>;

type Outcome<Result> =
  | { kind: "done"; results: Result[]; info: CommitInfo }
  | { kind: "failed"; error: unknown };

interface Waiter<Item, Result> {
  items: Item[];
  bytes: number;
  /** Set by the previous leader: this submission writes the next commit. */
  leads: boolean;
  /** Set by the leader whose commit included this submission. */
  outcome: Outcome<Result> | null;
}

export class CommitTimeoutError extends Error {}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class GroupCommit<Item, Result> {
  private readonly pending: Waiter<Item, Result>[] = [];
  private leaderSince: number | null = null;
  private readonly leaderTimeoutMs: number;
  private readonly waitTimeoutMs: number;
  private readonly pollMs: number;
  private readonly now: () => number;

  constructor(private readonly options: GroupCommitOptions<Item>) {
    this.leaderTimeoutMs = options.leaderTimeoutMs ?? 60_000;
    this.waitTimeoutMs = options.waitTimeoutMs ?? 90_000;
    this.pollMs = options.pollMs ?? 1;
    this.now = options.now ?? clockNow;
  }

  /**
   * Resolves once `items` are durably written (or rejects if their commit failed). If this
   * submission leads a commit, `write` (bound to this request's own bindings) writes it all.
   */
  async submit(
    items: Item[],
    write: CommitFn<Item, Result>,
    keepAlive?: (work: Promise<unknown>) => void,
  ): Promise<{ results: Result[]; info: CommitInfo }> {
    const waiter: Waiter<Item, Result> = {
      items,
      bytes: items.reduce((sum, item) => sum + this.options.sizeOf(item), 0),
      leads: false,
      outcome: null,
    };
    this.pending.push(waiter);
    const leaderLost =
      this.leaderSince !== null && this.now() - this.leaderSince > this.leaderTimeoutMs;
    if (this.leaderSince === null || leaderLost) this.handLeadershipTo(waiter);

    // The wait's own time-out is wall time: it bounds how long this request really waits.
    const giveUpAt = Date.now() + this.waitTimeoutMs;
    while (!waiter.leads && !waiter.outcome) {
      if (Date.now() > giveUpAt) {
        this.pending.splice(this.pending.indexOf(waiter), 1);
        throw new CommitTimeoutError("timed out waiting for the group commit; retry");
      }
      await sleep(this.pollMs);
    }
    if (!waiter.outcome) {
      const work = this.lead(waiter, write);
      keepAlive?.(work);
      await work;
    }
    const outcome = waiter.outcome as Outcome<Result> | null;
    if (!outcome) throw new Error("group commit finished without settling its leader");
    if (outcome.kind === "failed") throw outcome.error;
    return { results: outcome.results, info: outcome.info };
  }

  /** Submissions waiting for a commit (for tests and diagnostics). */
  get waiting(): number {
    return this.pending.length;
  }

  private handLeadershipTo(waiter: Waiter<Item, Result>): void {
    this.leaderSince = this.now();
    waiter.leads = true;
  }

  /** Writes the leader's submission and the oldest others that fit, settles them, hands over. */
  private async lead(leader: Waiter<Item, Result>, write: CommitFn<Item, Result>): Promise<void> {
    const batch = this.takeBatch(leader);
    try {
      const results = await write(batch.flatMap((w) => w.items));
      const info = {
        items: batch.reduce((n, w) => n + w.items.length, 0),
        submissions: batch.length,
      };
      let offset = 0;
      for (const w of batch) {
        w.outcome = { kind: "done", results: results.slice(offset, offset + w.items.length), info };
        offset += w.items.length;
      }
    } catch (error) {
      for (const w of batch) w.outcome = { kind: "failed", error };
    } finally {
      const next = this.pending[0];
      if (next) this.handLeadershipTo(next);
      else this.leaderSince = null;
    }
  }

  private takeBatch(leader: Waiter<Item, Result>): Waiter<Item, Result>[] {
    const own = this.pending.indexOf(leader);
    if (own >= 0) this.pending.splice(own, 1);
    const batch = [leader];
    let items = leader.items.length;
    let bytes = leader.bytes;
    while (this.pending.length) {
      const next = this.pending[0]!;
      const fits =
        items + next.items.length <= this.options.maxItems &&
        bytes + next.bytes <= this.options.maxBytes;
      if (!fits) break;
      batch.push(this.pending.shift()!);
      items += next.items.length;
      bytes += next.bytes;
    }
    return batch;
  }
}
