/**
 * The queue reads and writes of batch formation (acknowledgement: acks.ts). Each function is one
 * D1 round trip: what a lease decides from is read in one `batch()` (an expired lease's groups
 * in a second), and forming or renewing a lease is written in one (a lease API lease marks its
 * groups in a second, after its answer: lease-writes.ts). Only the RunCoordinator calls these,
 * under its run's lock, so a read and the write that follows it see the same queue.
 */
import {
  and,
  asc,
  eq,
  getTableColumns,
  gt,
  gte,
  lte,
  type Placeholder,
  type SQL,
  sql,
} from "drizzle-orm";
import type { DrizzleD1Database } from "drizzle-orm/d1";
import type { QueuedGroupRef } from "../../core/batching/packing";
import { compiled } from "./compiled";
import { renewEmptyEpochStatement, renewedOf } from "./empty-epoch";
import {
  GROUP_PAYLOAD_JOIN,
  GROUP_REF_COLUMNS,
  type GroupRefRow,
  groupRef,
  type LeasedGroupRef,
} from "./payloads";
import { db, type EnvRow, type RunRow } from "./runs";
import { batches, envs, groupPayloads, groups, runs } from "./schema";
import { guardedBatch } from "./transitions";

/** An env that reserves part of every batch (min_batch_allocation > 0), as batch formation reads it. */
export type AllocatingEnv = Pick<
  EnvRow,
  "envId" | "realName" | "minBatchAllocation" | "paused" | "connected" | "lastSeenAt"
>;

/** The run, its allocating envs and the head of its queue: what a new batch is planned from. */
export interface QueueHead {
  run: RunRow | undefined;
  /** The envs with a min_batch_allocation above 0 (the only envs batch formation reads). */
  envs: AllocatingEnv[];
  /** The oldest queued groups new enough for the trainer, at most `windowLimit` of them. */
  window: QueuedGroupRef[];
  /** Whether the window holds every such group (then a larger window cannot add any). */
  windowComplete: boolean;
}

export interface LeaseState extends QueueHead {
  /** `groups` in batch order; replayed groups carry `replayed: true`. */
  expired: { id: string; step: number; groups: LeasedGroupRef[] } | null;
  /** Leases of GET /batch acknowledged by this read (readLeaseState with ackCompat). */
  compatAcked: number;
  /** Batches still leased after this read, expired or not (an empty answer lasts while none). */
  leased: number;
  /** Whether this read drew a new empty epoch (readLeaseState with renewEmptyEpoch). */
  emptyEpochRenewed: boolean;
}

export interface LeaseStateQuery {
  now: number;
  /** Groups older than the run's policy version minus this are left out; null keeps all. */
  maxStaleness: number | null;
  windowLimit: number;
  /**
   * Acknowledge the run's live GET /batch leases first (an Atropos trainer pulling again has
   * trained on what it pulled before), in the same round trip.
   */
  ackCompat: boolean;
  /**
   * Draw a new empty epoch when the run has no queued group (storage/empty-epoch.ts), in the same
   * round trip: for a read that writes anyway (GET /batch's acknowledgement), so that an empty
   * answer it gives can be kept without a second one.
   */
  renewEmptyEpoch?: boolean;
}

type Orm = Pick<DrizzleD1Database, "select">;

export const refColumns = {
  id: groups.id,
  env_id: groups.envId,
  payload_key: groups.payloadKey,
  payload_encoding: groups.payloadEncoding,
  payload_offset: groups.payloadOffset,
  payload_bytes: groups.payloadBytes,
  raw_bytes: groups.rawBytes,
  raw_crc32: groups.rawCrc32,
  payload_inline: groupPayloads.body,
  policy_version: groups.policyVersion,
  num_seqs: groups.numSeqs,
};

const candidateColumns = { id: groups.id, envId: groups.envId, size: groups.numSeqs };

function queuedWhere(run: string | Placeholder, minVersion: number | SQL, envId?: number) {
  return and(
    eq(groups.run, run),
    eq(groups.status, "queued"),
    envId === undefined ? undefined : eq(groups.envId, envId),
    gte(groups.policyVersion, minVersion),
  );
}

export function idIn(ids: readonly number[] | Placeholder): SQL {
  const list = Array.isArray(ids) ? JSON.stringify(ids) : ids;
  return sql`${groups.id} IN (SELECT value FROM json_each(${list}))`;
}

// Placeholders of the compiled lease queries.
const p = {
  run: sql.placeholder("run"),
  now: sql.placeholder("now"),
  limit: sql.placeholder("limit"),
  maxStaleness: sql.placeholder("maxStaleness"),
  ids: sql.placeholder("ids"),
  batchId: sql.placeholder("batchId"),
};

function expiredLeaseId(d: Orm) {
  return d
    .select({ id: batches.id })
    .from(batches)
    .where(
      and(eq(batches.run, p.run), eq(batches.status, "leased"), lte(batches.leaseExpiresAt, p.now)),
    )
    .orderBy(asc(batches.step))
    .limit(1);
}

function liveCompatLeases() {
  return and(
    eq(batches.run, p.run),
    eq(batches.consumer, "compat"),
    eq(batches.status, "leased"),
    gt(batches.leaseExpiresAt, p.now),
  );
}

/** The run's row, its allocating envs and the queue's window (see `leaseReads.head`). */
function headColumns() {
  return {
    ...getTableColumns(runs),
    // Qualified names: drizzle leaves the outer query's columns unqualified.
    allocatingEnvsJson: sql<string>`(SELECT json_group_array(json_array(e.env_id, e.real_name,
      e.min_batch_allocation, e.paused, e.connected, e.last_seen_at))
      FROM envs AS e WHERE e.run = ${p.run} AND e.min_batch_allocation > 0)`,
    windowJson: sql<string>`(SELECT json_group_array(json_array(id, env_id, num_seqs)) FROM (
      SELECT q.id, q.env_id, q.num_seqs FROM groups AS q
      WHERE q.run = ${p.run} AND q.status = 'queued'
        AND q.policy_version >= COALESCE(runs.policy_version - ${p.maxStaleness}, -1)
      ORDER BY q.id LIMIT ${p.limit}))`,
  };
}

/** What a lease decides from, compiled once; `maxStaleness` null keeps every version. */
const leaseReads = {
  // By the batch's group list: replayed groups keep their own batch_id.
  batchRefs: compiled((d) =>
    d
      .select(refColumns)
      .from(groups)
      .leftJoin(groupPayloads, eq(groupPayloads.groupId, groups.id))
      .where(
        and(
          // Unary plus: looked up by id, not by scanning the run's groups.
          sql`+${groups.run} = ${p.run}`,
          sql`${groups.id} IN (SELECT value FROM json_each((SELECT ${batches.groupIds} FROM ${batches} WHERE ${batches.id} = ${p.batchId})))`,
        ),
      )
      .orderBy(asc(groups.id)),
  ),
  /**
   * The queue head in one statement (each statement of a D1 batch costs on its own): the run's
   * row, with its allocating envs and the queue's window as JSON arrays (env_id, real_name,
   * min_batch_allocation, paused, connected, last_seen_at) and (id, env_id, num_seqs).
   */
  head: compiled((d) => d.select(headColumns()).from(runs).where(eq(runs.name, p.run)).limit(1)),
  /**
   * The head with what a lease also decides from, in the same statement: the expired lease to
   * hand out again, if any, as a JSON array (id, step, replay_ids), and how many batches are
   * leased.
   */
  leaseHead: compiled((d) =>
    d
      .select({
        ...headColumns(),
        expiredJson: sql<string | null>`(SELECT json_array(x.id, x.step, x.replay_ids)
          FROM ${batches} AS x WHERE x.id = (${expiredLeaseId(d)}))`,
        leasedCount: sql<number>`(SELECT COUNT(*) FROM ${batches} AS l
          WHERE l.run = ${p.run} AND l.status = 'leased')`,
      })
      .from(runs)
      .where(eq(runs.name, p.run))
      .limit(1),
  ),
  // Its trigger (drizzle/0019) delivers each batch's groups, as an ack's does.
  ackBatches: compiled((d) =>
    d
      .update(batches)
      .set({ status: "acked", ackedAt: sql`${p.now}` })
      .where(liveCompatLeases())
      .returning({ id: batches.id }),
  ),
};

/**
 * Acknowledges the run's live GET /batch leases (an Atropos trainer pulling again has trained on
 * what it pulled before): one statement, whose result `compatAckedCount` reads.
 */
export function compatAckStatement(d1: D1Database, run: string, now: number): D1PreparedStatement {
  return leaseReads.ackBatches.bind(d1, { run, now });
}

/** How many batches the result of `compatAckStatement` acknowledged. */
export function compatAckedCount(result: D1Result): number {
  return leaseReads.ackBatches.rows(result).length;
}

export interface Reads<T> {
  /** To run in one D1 batch, alone or after a lease's writes. */
  statements: D1PreparedStatement[];
  /** The value, from these statements' results (in order). */
  parse(results: readonly D1Result[]): T;
}

type HeadRow = ReturnType<typeof leaseReads.head.rows>[number];
type EnvTuple = [number, string, number | null, number, number, number];

/** The queue head from its statement's row (none: the run does not exist, so neither does a queue). */
function queueHeadOf(row: HeadRow | undefined, windowLimit: number): QueueHead {
  if (!row) return { run: undefined, envs: [], window: [], windowComplete: true };
  const { allocatingEnvsJson, windowJson, ...run } = row;
  const envTuples = JSON.parse(allocatingEnvsJson) as EnvTuple[];
  const window = (JSON.parse(windowJson) as [number, number | null, number][])
    .map(([id, envId, size]) => ({ id, envId, size }))
    // The aggregate's input order is the subquery's in SQLite, but not promised: sorted here.
    .sort((a, b) => a.id - b.id);
  return {
    run,
    envs: envTuples
      .map(([envId, realName, minBatchAllocation, paused, connected, lastSeenAt]) => ({
        envId,
        realName,
        minBatchAllocation,
        paused: paused === 1,
        connected: connected === 1,
        lastSeenAt,
      }))
      .sort((a, b) => a.envId - b.envId),
    window,
    windowComplete: window.length < windowLimit,
  };
}

/** The read of a queue head, one statement (`maxStaleness` null keeps every version). */
export function queueHeadReads(
  d1: D1Database,
  run: string,
  q: Pick<LeaseStateQuery, "maxStaleness" | "windowLimit">,
): Reads<QueueHead> {
  const values = { run, limit: q.windowLimit, maxStaleness: q.maxStaleness };
  return {
    statements: [leaseReads.head.bind(d1, values)],
    parse: ([result]) => queueHeadOf(leaseReads.head.rows(result!)[0], q.windowLimit),
  };
}

/** The most inline payload bytes `headPrefixReads` reads (what the coordinator then keeps). */
export const HEAD_PREFIX_MAX_BYTES = 1 << 20;

/**
 * The oldest queued groups (as `queueHeadReads` reads the window) whose sizes add up to at most
 * the run's batch size and whose inline payloads to at most ?4 bytes, with their payload
 * references: the groups a lease planned from that head takes when they fill the batch exactly,
 * so it need not read them (group payloads never change once stored). The window is limited
 * before it is summed.
 */
const headPrefixRefs = `SELECT ${GROUP_REF_COLUMNS} FROM (
    SELECT id, SUM(num_seqs) OVER (ORDER BY id) AS cum, SUM(inline_bytes) OVER (ORDER BY id) AS bytes
    FROM (
      SELECT q.id, q.num_seqs, CASE WHEN q.payload_key = '' THEN q.payload_bytes ELSE 0 END AS inline_bytes
      FROM groups AS q
      WHERE q.run = ?1 AND q.status = 'queued'
        AND q.policy_version >= COALESCE((SELECT policy_version FROM runs WHERE name = ?1) - ?2, -1)
      ORDER BY q.id LIMIT ?3)) AS w
  JOIN groups AS g ON g.id = w.id ${GROUP_PAYLOAD_JOIN}
  WHERE w.cum <= (SELECT batch_size FROM runs WHERE name = ?1) AND w.bytes <= ?4
  ORDER BY g.id`.replace(/\s+/g, " ");

/** The read of `headPrefixRefs`, one statement (`maxStaleness` null keeps every version). */
export function headPrefixReads(
  d1: D1Database,
  run: string,
  q: Pick<LeaseStateQuery, "maxStaleness" | "windowLimit">,
): Reads<LeasedGroupRef[]> {
  const statement = d1.prepare(headPrefixRefs);
  return {
    statements: [statement.bind(run, q.maxStaleness, q.windowLimit, HEAD_PREFIX_MAX_BYTES)],
    // Our own statement's columns (GROUP_REF_COLUMNS), as the typed reads map them.
    parse: ([result]) => (result!.results as GroupRefRow[]).map(groupRef),
  };
}

/**
 * Everything a lease decides from: the queue head, an expired lease and the leased count, in one
 * statement, in one round trip (with GET /batch's acknowledgement and the empty epoch's draw,
 * when asked). An expired lease's groups take a second round trip: leases seldom expire, and
 * every lease would otherwise pay for the statement that reads them. Guarded (transitions.ts): a
 * lease planned from this read, and GET /batch's acknowledgement in it, rely on the batch
 * triggers.
 */
export async function readLeaseState(
  d1: D1Database,
  run: string,
  q: LeaseStateQuery,
): Promise<LeaseState> {
  const acks = q.ackCompat ? [compatAckStatement(d1, run, q.now)] : [];
  const values = { run, now: q.now, limit: q.windowLimit, maxStaleness: q.maxStaleness };
  const renew = q.renewEmptyEpoch ? [renewEmptyEpochStatement(d1, run)] : [];
  const results = await guardedBatch(d1, [
    ...acks,
    leaseReads.leaseHead.bind(d1, values),
    ...renew,
  ]);
  const compatAcked = q.ackCompat ? compatAckedCount(results[0]!) : 0;
  const row = leaseReads.leaseHead.rows(results[acks.length]!)[0];
  const { expiredJson = null, leasedCount = 0, ...head } = row ?? {};
  const expired = expiredJson
    ? (JSON.parse(expiredJson) as [id: string, step: number, replayIds: string | null])
    : null;
  return {
    ...queueHeadOf(row ? (head as HeadRow) : undefined, q.windowLimit),
    expired: expired && {
      id: expired[0],
      step: expired[1],
      // A batch's group list never changes once the batch is formed.
      groups: markReplayed(await batchRefs(d1, run, expired[0]), parseIds(expired[2])),
    },
    compatAcked,
    leased: leasedCount,
    emptyEpochRenewed: q.renewEmptyEpoch === true && renewedOf(results.at(-1)),
  };
}

/** The groups of a batch of the run, by the batch's group list. */
async function batchRefs(d1: D1Database, run: string, batchId: string) {
  const [result] = await d1.batch([leaseReads.batchRefs.bind(d1, { run, batchId })]);
  return leaseReads.batchRefs.rows(result!).map(groupRef);
}

/** The oldest `limit` queued groups with policy version ≥ `minVersion`. */
export async function queuedWindow(
  d1: D1Database,
  run: string,
  minVersion: number,
  limit: number,
): Promise<QueuedGroupRef[]> {
  return db(d1)
    .select(candidateColumns)
    .from(groups)
    .where(queuedWhere(run, minVersion))
    .orderBy(asc(groups.id))
    .limit(limit);
}

/** The oldest `perEnv` queued groups of each env in `envIds` (one round trip for all). */
export async function queuedOfEnvs(
  d1: D1Database,
  run: string,
  envIds: readonly number[],
  minVersion: number,
  perEnv: number,
): Promise<QueuedGroupRef[]> {
  const d = db(d1);
  const queries = envIds.map((envId) =>
    d
      .select(candidateColumns)
      .from(groups)
      .where(queuedWhere(run, minVersion, envId))
      .orderBy(asc(groups.id))
      .limit(perEnv),
  );
  const [first, ...rest] = queries;
  if (!first) return [];
  return (await d.batch([first, ...rest])).flat();
}

export function parseIds(json: string | null): number[] {
  return json ? (JSON.parse(json) as number[]) : [];
}

export function markReplayed(
  refs: LeasedGroupRef[],
  replayIds: readonly number[],
): LeasedGroupRef[] {
  if (replayIds.length === 0) return refs;
  const replayed = new Set(replayIds);
  return refs.map((ref) => (replayed.has(ref.id) ? { ...ref, replayed: true } : ref));
}

/** An env's group size and its buffered partial groups, oldest first. */
export async function readBuffered(d1: D1Database, run: string, envId: number) {
  const d = db(d1);
  const [env, buffered] = await d.batch([
    d
      .select({ groupSize: envs.groupSize })
      .from(envs)
      .where(and(eq(envs.run, run), eq(envs.envId, envId)))
      .limit(1),
    d
      .select({ id: groups.id, size: groups.numSeqs })
      .from(groups)
      .where(and(eq(groups.run, run), eq(groups.envId, envId), eq(groups.status, "buffered")))
      .orderBy(asc(groups.id)),
  ]);
  return { groupSize: env[0]?.groupSize ?? null, buffered };
}

/** Moves buffered groups to the queue. */
export async function queueBuffered(
  d1: D1Database,
  ids: readonly number[],
  now: number,
): Promise<void> {
  await db(d1)
    .update(groups)
    .set({ status: "queued", queuedAt: now })
    .where(and(eq(groups.status, "buffered"), idIn(ids)));
}
