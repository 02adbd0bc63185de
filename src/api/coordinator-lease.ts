/**
 * The RunCoordinator's lease transition: renew an expired lease or form a new batch from the
 * queue (and the replay buffer), setting stale groups aside on the way. Plain functions over D1
 * and the coordinator's in-memory hints (`LeaseMemory`); the Durable Object calls them inside its
 * exclusive section and owns nothing of this logic.
 */
import { v7 as uuidv7 } from "uuid";
import type { PackResult } from "../core/batching/packing";
import { minAcceptedVersion, reasonWithStaleness } from "../core/batching/staleness";
import type { MixResult } from "../core/closed-loop/replay-mix";
import { activeAllocations, planBatch, type ReplayPlan } from "./batch-plan";
import { dissolveLease, formLease, type PlanCheck, renewLease } from "./storage/lease-writes";
import { type LeaseState, type QueueHead, queuedOfEnvs, queuedWindow } from "./storage/leases";
import type { LeasedGroupRef } from "./storage/payloads";
import { markReplayedStatements, replayCandidates } from "./storage/replay";
import type { RunRow } from "./storage/runs";
import { evictStale, evictStaleStatement, requeueAccepted, staleCount } from "./storage/staleness";

export type LeaseOutcome =
  | {
      kind: "batch";
      batchId: string;
      leaseId: string;
      step: number;
      leaseExpiresAt: number;
      redelivered: boolean;
      groups: LeasedGroupRef[];
    }
  | { kind: "none"; reason: string }
  | { kind: "not_registered" };

/**
 * Where a lease's time went inside the coordinator, in ms (the routes send it as Server-Timing):
 * `read` the lease state, `plan` choosing the groups (with any extra reads), `write` forming or
 * renewing the lease. Timed with performance.now, which workerd advances only across I/O.
 */
export interface LeaseStages {
  read: number;
  plan: number;
  write: number;
}

/**
 * `stages` is empty for an answer the coordinator gave from memory, without D1. `acknowledged`:
 * the earlier batches a GET /batch acknowledged (absent when none).
 */
export type TimedLeaseOutcome = LeaseOutcome & {
  stages: Partial<LeaseStages>;
  acknowledged?: number;
};

export function newStages(): LeaseStages {
  return { read: 0, plan: 0, write: 0 };
}

export interface LeaseOptions {
  consumer: "compat" | "lease";
  leaseSeconds: number;
  maxStaleness: number | null;
  /** The token taking the lease (null: API_TOKEN or open local development). */
  holder: string | null;
}

/** What the coordinator remembers between leases; every value is a hint that stays correct. */
export interface LeaseMemory {
  /** The first window's size: the run's batch size as last seen (any value is correct). */
  windowHint: number;
  /**
   * Staleness: the bound below which queued groups were last set aside. A successful lease evicts
   * again only when its bound is higher (about once per policy version, not once per lease: the
   * eviction scans the queue); a lease that finds no batch always evicts.
   */
  evictedBelow: number | null;
  /**
   * Whether the run may hold stale groups. Only the coordinator sets groups aside, so once a
   * lease that accepts every version has queued them all again, none exist until it evicts:
   * empty pulls then skip the requeue's round trip. Unknown (true) after a restart.
   */
  staleMayExist: boolean;
  /**
   * The queue as the last new lease's write left it (read in that write's round trip, or in the
   * round trip after it when its groups were deferred), for the bound it was read under. The next lease plans from it and writes under a plan check, with no
   * read first. The coordinator forgets it when any other transition that may change it runs.
   */
  next: {
    head: QueueHead;
    maxStaleness: number | null;
    /**
     * The head's oldest groups that fit the batch, with their payload references (read with the
     * head after a deferred lease, up to HEAD_PREFIX_MAX_BYTES of inline payloads): a lease that
     * plans exactly these groups does not read them again.
     */
    prefix?: LeasedGroupRef[];
  } | null;
}

/** What a lease transition reads besides its arguments. */
export interface LeaseContext {
  db: D1Database;
  memory: LeaseMemory;
  /** ENV_STALE_SECONDS: envs quiet longer than this lose their batch allocation. */
  envStaleSeconds: number;
  /**
   * Given: a new batch's groups are marked leased after the answer (storage/lease-writes.ts,
   * `deferGroups`), by `work`, which the caller runs before any other transition of the run.
   */
  defer?: (work: () => Promise<void>) => void;
}

/** Oldest queued groups considered per batch: first a batch-sized window, then this many. */
export const QUEUE_WINDOW = 4096;
/** Replay buffer candidates read per batch beyond batch_size (highest priorities first). */
const REPLAY_SLACK = 16;

export function firstWindow(batchSize: number): number {
  return Math.min(QUEUE_WINDOW, Math.max(batchSize, 16));
}

/**
 * Call with the state read under the same exclusive section (one round trip). Renewing an
 * expired lease or forming a new one is one more; allocated envs and a queue head that does not
 * pack add a read each.
 */
export async function leaseLocked(
  cx: LeaseContext,
  run: string,
  runRow: RunRow,
  state: LeaseState,
  timing: LeaseTiming,
  options: LeaseOptions,
): Promise<LeaseOutcome> {
  const { now, stages } = timing;
  const { db, memory } = cx;
  const planStarted = performance.now();
  const planned = () => {
    stages.plan = performance.now() - planStarted;
    return performance.now();
  };
  const leaseExpiresAt = now + Math.round(options.leaseSeconds * 1000);
  const leaseId = crypto.randomUUID();
  const minVersion = minAcceptedVersion(runRow.policyVersion, options.maxStaleness);
  memory.windowHint = firstWindow(runRow.batchSize);

  // 1. An expired lease: hand the same batch out again (same id and step).
  let queue: LeaseState = state;
  const expired = state.expired;
  if (expired) {
    if (minVersion !== null && expired.groups.some((g) => g.policyVersion < minVersion)) {
      // Too stale for this trainer: dissolve it so fresh groups are packed instead.
      await dissolveLease(db, run, expired);
      const head = await queuedWindow(db, run, minVersion, memory.windowHint);
      queue = { ...state, window: head, windowComplete: head.length < memory.windowHint };
    } else {
      const writeStarted = planned();
      await renewLease(db, expired.id, {
        leaseId,
        leaseExpiresAt,
        consumer: options.consumer,
        holder: options.holder,
      });
      stages.write = performance.now() - writeStarted;
      return {
        kind: "batch",
        batchId: expired.id,
        leaseId,
        step: expired.step,
        leaseExpiresAt,
        redelivered: true,
        groups: expired.groups,
      };
    }
  }

  // 2. Form a new batch from the oldest queued groups (and the replay buffer, when mixing).
  const replay = await replayPlan(db, run, runRow, minVersion);
  let packed = await planLease(cx, run, queue, runRow.batchSize, minVersion, now, replay);
  // Staleness: set-aside groups this lease accepts count again when the queue alone falls short.
  if (!packed.ok && memory.staleMayExist && (await requeueAcceptedOf(cx, run, minVersion)) > 0) {
    const head = await queuedWindow(db, run, minVersion ?? -1, memory.windowHint);
    queue = { ...queue, window: head, windowComplete: head.length < memory.windowHint };
    packed = await planLease(cx, run, queue, runRow.batchSize, minVersion, now, replay);
  }
  if (!packed.ok) {
    planned();
    if (minVersion === null || options.maxStaleness === null) {
      return { kind: "none", reason: packed.reason };
    }
    // Staleness: groups too old for this bound leave the queue (and the counts envs throttle on).
    memory.staleMayExist = true;
    const evictedNow = await evictStale(db, run, minVersion);
    memory.evictedBelow = minVersion;
    const staleTotal = await staleCount(db, run);
    const eviction = {
      evictedNow,
      staleTotal,
      currentVersion: runRow.policyVersion,
      maxStaleness: options.maxStaleness,
    };
    return { kind: "none", reason: reasonWithStaleness(packed.reason, eviction) };
  }
  planned();
  const memorable = !queue.envs.some((e) => (e.minBatchAllocation ?? 0) > 0);
  const written = await writeNewBatch(
    cx,
    run,
    runRow,
    packed,
    replay,
    minVersion,
    timing,
    options,
    {
      memorable,
    },
  );
  // Unreachable: only a plan check makes a write stale, and this plan was read under the lock.
  if (!written) throw new Error("a lease planned from a fresh read was refused as stale");
  return written.outcome;
}

/** A lease's clock and stage timings (`started`: when it began reading; formation time counts the reads). */
export interface LeaseTiming {
  now: number;
  started: number;
  stages: LeaseStages;
}

/**
 * Writes a new batch of `packed` (and the replays chosen), reading the next lease's state in the
 * same round trip (with `cx.defer`, in the deferred one that marks its groups). With `check`,
 * only if the plan's state still holds: null when it did not (nothing written, `before` included).
 */
async function writeNewBatch(
  cx: LeaseContext,
  run: string,
  runRow: RunRow,
  packed: (PackResult | MixResult) & { ok: true },
  replay: ReplayPlan | null,
  minVersion: number | null,
  { now, started, stages }: LeaseTiming,
  options: LeaseOptions,
  planned: {
    check?: PlanCheck;
    before?: readonly D1PreparedStatement[];
    groups?: readonly LeasedGroupRef[];
    /** Whether the next lease may plan from memory as this one's state stands (no allocations). */
    memorable?: boolean;
  } = {},
): Promise<{ outcome: LeaseOutcome; before: D1Result[] } | null> {
  const { db, memory } = cx;
  // Time-ordered: a new batch's id lands at the end of the indexes keyed by it (the batch table's
  // key, groups_by_batch), on one page, instead of on a random one.
  const batchId = uuidv7({ msecs: now });
  const leaseId = crypto.randomUUID();
  const leaseExpiresAt = now + Math.round(options.leaseSeconds * 1000);
  const step = runRow.step + 1;
  const replayIds = "replayIds" in packed ? packed.replayIds : [];
  const replaySeqs = replay
    ? replay.candidates.filter((c) => replayIds.includes(c.id)).reduce((t, c) => t + c.size, 0)
    : 0;
  const evict =
    minVersion !== null && (memory.evictedBelow === null || minVersion > memory.evictedBelow);
  const defer = cx.defer;
  const writeStarted = performance.now();
  const formed = await formLease(
    db,
    run,
    {
      batchId,
      step,
      consumer: options.consumer,
      leaseId,
      leaseExpiresAt,
      maxStaleness: options.maxStaleness,
      policyVersion: runRow.policyVersion,
      groupIds: [...packed.ids, ...replayIds].sort((x, y) => x - y),
      replayIds,
      replaySeqs,
      sequences: packed.sequences,
      formationMs: performance.now() - started,
      now,
      holder: options.holder,
    },
    {
      before: planned.before,
      check: planned.check,
      extra: markReplayedStatements(db, run, replayIds, runRow.replayMaxReplays),
      // Staleness: set aside what this bound can never deliver (once this batch's are leased).
      afterGroups: evict && minVersion !== null ? [evictStaleStatement(db, run, minVersion)] : [],
      next: { maxStaleness: options.maxStaleness, windowLimit: memory.windowHint },
      deferGroups: defer !== undefined,
      // Replays and env allocations keep the next lease from planning from memory.
      readPrefix: (planned.memorable ?? true) && !runRow.replayEnabled,
      groups: planned.groups,
    },
  );
  stages.write = performance.now() - writeStarted;
  if (!formed) return null;
  const settled = (head: QueueHead | null, prefix?: LeasedGroupRef[]) => {
    if (evict) {
      memory.evictedBelow = minVersion;
      memory.staleMayExist = true;
    }
    memory.next = head && { head, maxStaleness: options.maxStaleness, prefix };
  };
  const settle = formed.settle;
  if (settle && defer) {
    defer(async () => {
      const read = await settle();
      settled(read?.head ?? null, read?.prefix);
    });
  } else settled(formed.next);
  const groups = formed.groups;
  return {
    outcome: { kind: "batch", batchId, leaseId, step, leaseExpiresAt, redelivered: false, groups },
    before: formed.before,
  };
}

/**
 * A new batch planned from `memory.next` (the queue as the previous lease's write read it back)
 * and written in one round trip under a plan check. Null when that head is missing, was read
 * under another staleness bound, holds something this shortcut does not plan (replays, env
 * allocations, a head that does not pack) or no longer holds, or a lease has expired since (the
 * check sees it): the caller then reads afresh. `before` runs in the same transaction (GET
 * /batch's acknowledgements).
 */
export async function leaseFromMemory(
  cx: LeaseContext,
  run: string,
  timing: LeaseTiming,
  options: LeaseOptions,
  before: readonly D1PreparedStatement[] = [],
): Promise<{ outcome: LeaseOutcome; before: D1Result[] } | null> {
  const remembered = cx.memory.next;
  cx.memory.next = null;
  if (!remembered || remembered.maxStaleness !== options.maxStaleness) return null;
  const { head } = remembered;
  const runRow = head.run;
  if (!runRow?.registered || runRow.replayEnabled) return null;
  if (head.envs.some((e) => e.minBatchAllocation !== null && e.minBatchAllocation > 0)) {
    return null;
  }
  const planStarted = performance.now();
  const packed = planBatch(head.window, [], runRow.batchSize, [], null);
  timing.stages.plan = performance.now() - planStarted;
  if (!packed.ok) return null;
  const minVersion = minAcceptedVersion(runRow.policyVersion, options.maxStaleness);
  // Groups queued since the read-back come after the window (ids only grow). A fresh read of a
  // full window sees the same window; one that held the whole queue would also see them, and
  // they can change the plan when it skipped an older group (the earliest exact subset of the
  // longer queue may take that group): then the write holds only while none was queued.
  const prefix = packed.ids.every((id, i) => head.window[i]?.id === id);
  const last = head.window.at(-1);
  const check = {
    step: runRow.step,
    policyVersion: runRow.policyVersion,
    batchSize: runRow.batchSize,
    queuedAfter:
      head.windowComplete && !prefix && last ? { id: last.id, minVersion: minVersion ?? -1 } : null,
  };
  // The plan's groups as read with the head, when it took exactly those (the common case).
  const read = remembered.prefix;
  const known =
    read?.length === packed.ids.length && read.every((g, i) => g.id === packed.ids[i])
      ? read
      : undefined;
  return writeNewBatch(cx, run, runRow, packed, null, minVersion, timing, options, {
    check,
    before,
    groups: known,
  });
}

/** Queues again the stale groups this bound accepts (all of them when it has none). */
async function requeueAcceptedOf(
  cx: LeaseContext,
  run: string,
  minVersion: number | null,
): Promise<number> {
  const requeued = await requeueAccepted(cx.db, run, minVersion);
  if (minVersion === null) cx.memory.staleMayExist = false;
  return requeued;
}

/**
 * Chooses the groups of the next batch without changing anything. The common case (sizes that
 * pack greedily) needs at most `batchSize` groups, which the lease state already holds; the
 * large window is read only when that head cannot be packed.
 */
export async function planLease(
  cx: LeaseContext,
  run: string,
  state: Pick<LeaseState, "envs" | "window" | "windowComplete">,
  batchSize: number,
  minVersion: number | null,
  now: number,
  replay: ReplayPlan | null = null,
): Promise<PackResult | MixResult> {
  const versionFloor = minVersion ?? -1;
  const allocations = activeAllocations(state.envs, now, cx.envStaleSeconds);
  // An allocated env's groups may sit behind the window; fetch enough of them explicitly.
  const extra = await queuedOfEnvs(
    cx.db,
    run,
    allocations.map((a) => a.envId),
    versionFloor,
    batchSize,
  );
  const first = planBatch(state.window, extra, batchSize, allocations, replay);
  if (first.ok || state.windowComplete || state.window.length >= QUEUE_WINDOW) return first;
  const wide = await queuedWindow(cx.db, run, versionFloor, QUEUE_WINDOW);
  return planBatch(wide, extra, batchSize, allocations, replay);
}

/** Replay candidates for the next batch, or null when the run does not mix replays in. */
async function replayPlan(
  db: D1Database,
  run: string,
  runRow: RunRow,
  minVersion: number | null,
): Promise<ReplayPlan | null> {
  if (!runRow.replayEnabled || runRow.replayFraction <= 0) return null;
  const candidates = await replayCandidates(
    db,
    run,
    runRow.replayMaxReplays,
    minVersion,
    // Enough to reach any fraction of the batch even with one-sequence groups.
    runRow.batchSize + REPLAY_SLACK,
  );
  return candidates.length > 0 ? { candidates, fraction: runRow.replayFraction } : null;
}
