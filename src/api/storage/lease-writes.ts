/**
 * The writes of batch formation: forming a new lease (with the statistics of its step), renewing
 * an expired one, dissolving one. Each is one D1 round trip; forming a lease also reads the next
 * lease's state in that round trip, so the RunCoordinator can plan the next batch without a read
 * and write it under a plan check (`lease_plan_checks`) that aborts the write if the state changed.
 *
 * A lease may defer its groups (`deferGroups`): its round trip then writes only the batch row,
 * which holds the group list and is the lease, and the step; marking the groups leased, the
 * step's statistics and the next queue head follow in a second round trip (`settle`) that the
 * coordinator runs after answering and before any other transition of the run. A restarted
 * coordinator, or one whose `settle` failed, runs `settleLeasedGroups` before its next lease or
 * ack, so no transition ever sees a leased batch's groups queued.
 */
import { and, asc, eq, sql } from "drizzle-orm";
import { compiled, compiledSql } from "./compiled";
import {
  headPrefixReads,
  idIn,
  type LeaseStateQuery,
  markReplayed,
  type QueueHead,
  queueHeadReads,
  refColumns,
} from "./leases";
import { recordBatchStatistics } from "./metrics";
import { groupRef, type LeasedGroupRef } from "./payloads";
import { db } from "./runs";
import {
  batches,
  batchStatistics,
  envs,
  groupPayloads,
  groups,
  leasePlanChecks,
  runs,
} from "./schema";
import { CHECK_FAILED, guardedBatch } from "./transitions";

// Placeholders of the compiled lease writes.
const p = {
  run: sql.placeholder("run"),
  now: sql.placeholder("now"),
  ids: sql.placeholder("ids"),
  batchId: sql.placeholder("batchId"),
};

export interface NewLease {
  batchId: string;
  step: number;
  consumer: "compat" | "lease";
  leaseId: string;
  leaseExpiresAt: number;
  maxStaleness: number | null;
  policyVersion: number;
  /** Every group of the batch, online and replayed. */
  groupIds: readonly number[];
  /** The replayed ones: they stay delivered (in the replay buffer) instead of being leased. */
  replayIds: readonly number[];
  replaySeqs: number;
  sequences: number;
  formationMs: number;
  now: number;
  /** The token taking the lease (null: API_TOKEN or open local development). */
  holder: string | null;
}

const leaseWrites = {
  insertBatch: compiled((d) =>
    d.insert(batches).values({
      id: p.batchId,
      run: p.run,
      step: sql.placeholder("step"),
      status: "leased",
      consumer: sql.placeholder("consumer"),
      leaseId: sql.placeholder("leaseId"),
      leaseExpiresAt: sql.placeholder("leaseExpiresAt"),
      maxStaleness: sql.placeholder("maxStaleness"),
      policyVersion: sql.placeholder("policyVersion"),
      numGroups: sql.placeholder("numGroups"),
      numSeqs: sql.placeholder("sequences"),
      groupIds: p.ids,
      replayIds: sql.placeholder("replayIds"),
      replaySeqs: sql.placeholder("replaySeqs"),
      formationMs: sql.placeholder("formationMs"),
      createdAt: p.now,
      holder: sql.placeholder("holder"),
      groupsDeferred: sql.placeholder("groupsDeferred"),
    }),
  ),
  advanceStep: compiled((d) =>
    d
      .update(runs)
      .set({ step: sql`${runs.step} + 1`, started: true, updatedAt: sql`${p.now}` })
      .where(eq(runs.name, p.run)),
  ),
  leasedRefs: compiled((d) =>
    d
      .select(refColumns)
      .from(groups)
      .leftJoin(groupPayloads, eq(groupPayloads.groupId, groups.id))
      // Unary plus: looked up by id, not by scanning the run's groups.
      .where(and(sql`+${groups.run} = ${p.run}`, idIn(p.ids)))
      .orderBy(asc(groups.id)),
  ),
};

/** What a lease planned from remembered state assumed; its write applies only if all still hold. */
export interface PlanCheck {
  /** The run's step, policy version and batch size the plan saw. */
  step: number;
  policyVersion: number;
  batchSize: number;
  /**
   * Set when the plan read the whole queue and skipped an older group: a group queued since
   * (id above `id`, policy version at least `minVersion`) could let that group in, so the plan
   * holds only while there is none.
   */
  queuedAfter: { id: number; minVersion: number } | null;
}

/**
 * Inserting into lease_plan_checks aborts the batch unless the value is true (its trigger): true
 * when every planned group is still queued, the run is as planned and mixes in no replays, no env
 * reserves part of the batch (an operator may have set one since), no lease has expired
 * (an expired batch goes out again before a new one is formed) and, with `queuedAfter`, no group
 * was queued after the plan's window.
 */
const planCheck = compiledSql(
  () => sql`INSERT INTO ${leasePlanChecks} (${sql.identifier(leasePlanChecks.current.name)}) SELECT
    (SELECT COUNT(*) FROM ${groups} WHERE ${groups.run} = ${p.run} AND ${groups.status} = 'queued' AND ${idIn(p.ids)}) = ${sql.placeholder("numGroups")}
    AND EXISTS (SELECT 1 FROM ${runs} WHERE ${runs.name} = ${p.run} AND ${runs.step} = ${sql.placeholder("planStep")}
      AND ${runs.policyVersion} = ${sql.placeholder("policyVersion")} AND ${runs.batchSize} = ${sql.placeholder("batchSize")}
      AND NOT ${runs.replayEnabled})
    AND NOT EXISTS (SELECT 1 FROM ${envs} WHERE ${envs.run} = ${p.run} AND ${envs.minBatchAllocation} > 0)
    AND NOT EXISTS (SELECT 1 FROM ${batches} WHERE ${batches.run} = ${p.run} AND ${batches.status} = 'leased' AND ${batches.leaseExpiresAt} <= ${p.now})
    AND (${sql.placeholder("queuedAfter")} IS NULL OR NOT EXISTS (SELECT 1 FROM ${groups} WHERE ${groups.run} = ${p.run} AND ${groups.status} = 'queued'
      AND ${groups.id} > ${sql.placeholder("queuedAfter")} AND ${groups.policyVersion} >= ${sql.placeholder("queuedFloor")}))`,
);

export interface LeaseWriteOptions {
  /** Run first, in the same transaction (GET /batch acknowledging its previous leases). */
  before?: readonly D1PreparedStatement[];
  /** Written after the lease, before the leased groups are read back. */
  extra?: readonly D1PreparedStatement[];
  /** Written once the groups are leased (with `deferGroups`, in `settle`'s transaction). */
  afterGroups?: readonly D1PreparedStatement[];
  /** Write only the batch row and the step now; the rest in `settle` (the module's comment). */
  deferGroups?: boolean;
  /** With `deferGroups` and `next`: `settle` also reads the head's prefix (`SettledHead`). */
  readPrefix?: boolean;
  /**
   * The leased groups' references, when the caller has them (read before, with the queue head):
   * not read again. Only for groups every one of which the write leases (a plan check holds it).
   */
  groups?: readonly LeasedGroupRef[];
  /** The plan came from remembered state: write only if it still holds. */
  check?: PlanCheck | null;
  /** Read the queue head the next lease plans from after the writes, in the same round trip. */
  next?: Pick<LeaseStateQuery, "maxStaleness" | "windowLimit"> | null;
}

export interface FormedLease {
  groups: LeasedGroupRef[];
  /** The queue head as this write left it (when `next` was asked and nothing was deferred). */
  next: QueueHead | null;
  /** The results of the `before` statements. */
  before: D1Result[];
  /**
   * With `deferGroups`: the second round trip (groups leased, statistics, `afterGroups`), which
   * resolves to the queue head as it left it, with the references of its prefix that fits the
   * batch (`headPrefixReads`), when `next` was asked. Run it before any other transition of the
   * run.
   */
  settle: (() => Promise<SettledHead | null>) | null;
}

/** The queue head a deferred lease's second round trip read back. */
export interface SettledHead {
  head: QueueHead;
  /** The oldest queued groups that fit the batch, with their payload references. */
  prefix: LeasedGroupRef[];
}

/**
 * Leases the groups as a new batch and advances the run's step; returns the leased groups, or
 * null when `check` found the plan stale (then nothing was written, `before` included).
 */
export async function formLease(
  d1: D1Database,
  run: string,
  lease: NewLease,
  options: LeaseWriteOptions = {},
): Promise<FormedLease | null> {
  const values = {
    run,
    now: lease.now,
    batchId: lease.batchId,
    step: lease.step,
    consumer: lease.consumer,
    leaseId: lease.leaseId,
    leaseExpiresAt: lease.leaseExpiresAt,
    maxStaleness: lease.maxStaleness,
    policyVersion: lease.policyVersion,
    numGroups: lease.groupIds.length,
    sequences: lease.sequences,
    ids: JSON.stringify(lease.groupIds),
    replayIds: lease.replayIds.length > 0 ? JSON.stringify(lease.replayIds) : null,
    replaySeqs: lease.replaySeqs,
    formationMs: lease.formationMs,
    holder: lease.holder,
    groupsDeferred: options.deferGroups ? 1 : 0,
  };
  const before = options.before ?? [];
  const check = options.check
    ? [
        planCheck.bind(d1, {
          ...values,
          planStep: options.check.step,
          policyVersion: options.check.policyVersion,
          batchSize: options.check.batchSize,
          queuedAfter: options.check.queuedAfter?.id ?? null,
          queuedFloor: options.check.queuedAfter?.minVersion ?? null,
        }),
      ]
    : [];
  const next = options.next ? queueHeadReads(d1, run, options.next) : null;
  const prefix =
    options.next && options.deferGroups && options.readPrefix
      ? headPrefixReads(d1, run, options.next)
      : null;
  const known = options.groups;
  const statistics = recordBatchStatistics.bind(d1, values);
  const afterGroups = options.afterGroups ?? [];
  const deferred = options.deferGroups
    ? [settleStatement.bind(d1, values), statistics, ...afterGroups]
    : [];
  const writes = [
    ...(options.deferGroups ? [] : [statistics]),
    // Without deferGroups, its trigger leases the online groups (drizzle/0022).
    leaseWrites.insertBatch.bind(d1, values),
    leaseWrites.advanceStep.bind(d1, values),
    ...(options.extra ?? []),
    ...(options.deferGroups ? [] : afterGroups),
    ...(known ? [] : [leaseWrites.leasedRefs.bind(d1, values)]),
  ];
  const nextNow = options.deferGroups ? [] : (next?.statements ?? []);
  let results: D1Result[];
  try {
    results = await d1.batch([...before, ...check, ...writes, ...nextNow]);
  } catch (err) {
    if (check.length > 0 && err instanceof Error && err.message.includes(CHECK_FAILED)) return null;
    throw err;
  }
  // The reads of the next queue head follow the writes (leasedRefs, when sent, is the last).
  const readsAt = before.length + check.length + writes.length;
  const settle = async (): Promise<SettledHead | null> => {
    const reads = [...(next?.statements ?? []), ...(prefix?.statements ?? [])];
    const settled = (await d1.batch([...deferred, ...reads])).slice(deferred.length);
    if (!next) return null;
    const at = next.statements.length;
    const head = next.parse(settled.slice(0, at));
    return { head, prefix: prefix ? prefix.parse(settled.slice(at)) : [] };
  };
  const refs = known
    ? [...known]
    : leaseWrites.leasedRefs.rows(results[readsAt - 1]!).map(groupRef);
  return {
    groups: markReplayed(refs, lease.replayIds),
    next: next && !options.deferGroups ? next.parse(results.slice(readsAt)) : null,
    before: results.slice(0, before.length),
    settle: options.deferGroups ? settle : null,
  };
}

/**
 * Marks the groups of the run's deferred leases leased where they are still queued: what the
 * insert's trigger does for a lease that is not deferred (drizzle/0022). The first statement of
 * each deferred lease's `settle`, and, alone, of a coordinator's first lease or ack after it
 * restarted or a `settle` failed. A no-op when every deferred lease settled.
 */
const settleStatement = compiledSql(
  () => sql`UPDATE ${groups} SET ${sql.identifier(groups.status.name)} = 'leased', ${sql.identifier(groups.batchId.name)} = (
      SELECT b.id FROM ${batches} AS b, json_each(b.group_ids) AS j
      WHERE b.run = ${p.run} AND b.status = 'leased' AND b.groups_deferred = 1 AND j.value = ${groups.id}
      ORDER BY b.step LIMIT 1)
    WHERE ${groups.run} = ${p.run} AND ${groups.status} = 'queued' AND ${groups.id} IN (
      SELECT j.value FROM ${batches} AS b, json_each(b.group_ids) AS j
      WHERE b.run = ${p.run} AND b.status = 'leased' AND b.groups_deferred = 1
        AND j.value NOT IN (SELECT value FROM json_each(COALESCE(b.replay_ids, '[]'))))`,
);

export async function settleLeasedGroups(d1: D1Database, run: string): Promise<void> {
  // Guarded: it is the first statement a restarted coordinator sends.
  await guardedBatch(d1, [settleStatement.bind(d1, { run })]);
}

/** Hands an expired lease's batch out again under a new lease id; the lapsed id is kept. */
export async function renewLease(
  d1: D1Database,
  batchId: string,
  lease: {
    leaseId: string;
    leaseExpiresAt: number;
    consumer: "compat" | "lease";
    holder: string | null;
  },
): Promise<void> {
  await db(d1)
    .update(batches)
    .set({
      leaseId: lease.leaseId,
      leaseExpiresAt: lease.leaseExpiresAt,
      leaseCount: sql`${batches.leaseCount} + 1`,
      consumer: lease.consumer,
      holder: lease.holder,
      priorLeaseIds: sql`json_insert(COALESCE(${batches.priorLeaseIds}, '[]'), '$[#]', ${batches.leaseId})`,
    })
    .where(eq(batches.id, batchId));
}

/** Returns an expired batch's groups to the queue and forgets the batch. */
export async function dissolveLease(
  d1: D1Database,
  run: string,
  batch: { id: string; step: number },
): Promise<void> {
  const d = db(d1);
  await d.batch([
    d.update(groups).set({ status: "queued", batchId: null }).where(eq(groups.batchId, batch.id)),
    d.delete(batches).where(eq(batches.id, batch.id)),
    // Its step was never trained on: its statistics would describe no batch.
    d
      .delete(batchStatistics)
      .where(and(eq(batchStatistics.run, run), eq(batchStatistics.step, batch.step))),
  ]);
}
