/**
 * The commit of ingest: items validated (group-validation.ts) and built (ingest-item.ts; the
 * stored bytes are what delivery sends) are written, large payloads to R2, then each group to D1
 * in one statement that also dedupes retries, picks the buffered/queued state and stamps the
 * policy version (the SQL is in src/api/storage/groups.ts; a payload kept in D1 goes into
 * group_payloads in the same transaction, and so do its trajectories and token texts). A 200 is
 * only sent after both writes, so an acknowledged group, and everything it carried, survives any
 * restart.
 *
 * Retries are recognised per submission, never per group content: each group carries a dedupe
 * key naming its request (Idempotency-Key, else the SHA-256 of the whole body) and its position
 * in it. Identical groups of one request differ in position, so all are stored; a resent request
 * matches its earlier copy within DEDUPE_WINDOW_SECONDS. The body names the env_id of every
 * group, so the same body from another env is another submission.
 */

import { now as clockNow } from "../core/concurrency/clock";
import { GroupCommit } from "../core/concurrency/group-commit";
import { checkSequenceLength } from "../core/wire/group-rules";
import type { Bindings } from "./bindings";
import { ApiError } from "./errors";
import { fail } from "./group-validation";
import type { IngestItem } from "./ingest-item";
import { settingsOf } from "./settings";
import { emptyEpochOf, emptyEpochStatement } from "./storage/empty-epoch";
import {
  type GroupInsert,
  groupInsertStatements,
  type InsertedGroup,
  insertedGroupOf,
  itemKeyAnswer,
  recentSubmission,
  runIngestLimits,
  touchEnvStatement,
} from "./storage/groups";
import { payloadKey, putPayload } from "./storage/payloads";
import { submissionTokenTextsInsert } from "./storage/token-texts";
import { submissionTrajectoryInserts } from "./storage/trajectories";
import { Timings } from "./timings";

export interface IngestOutcome {
  groupId: number;
  status: "queued" | "buffered" | "delivered";
  duplicate: boolean;
  envId: number | null;
}

/** An item as its commit writes it: with the limits its whole submission is checked against. */
type CommitItem = IngestItem & { submission: GroupInsert["submission"] };

/** One item's fate in a commit: its new row (null: not inserted) and the commit's timings. */
interface CommittedItem {
  row: InsertedGroup | null;
  r2Ms: number;
  d1Ms: number;
}

/** A submission stored after this time is what a resend of it is a retry of (DEDUPE_WINDOW_SECONDS). */
function dedupeCutoff(env: Bindings, now: number): number {
  return now - settingsOf(env).DEDUPE_WINDOW_SECONDS * 1000;
}

// Bounds one commit: memory (payloads are held until written) and D1 batch size.
const COMMIT_MAX_ITEMS = 64;
const COMMIT_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Writes the items of every submission in the commit: the payloads too large to go inline
 * concatenated into ONE R2 object (each row records its offset and length), then ONE D1 batch
 * (a transaction) with every insert, small payloads beside their rows. Nothing is acknowledged
 * before both writes, so a 200 still means durable.
 */
async function writeCommit(env: Bindings, run: string, state: RunIngest, items: CommitItem[]) {
  const now = clockNow();
  const cutoff = dedupeCutoff(env, now);
  const toR2 = items.filter((item) => item.inline === null);
  const key = toR2.length > 0 ? payloadKey(run) : "";
  const offsets: number[] = [];
  let size = 0;
  for (const item of items) {
    offsets.push(item.inline === null ? size : 0);
    if (item.inline === null) size += item.payload.byteLength;
  }
  const r2Started = performance.now();
  if (toR2.length > 0) {
    await putPayload(
      env.PAYLOADS,
      key,
      toR2.length === 1 ? toR2[0]!.payload : toR2.map((i) => i.payload),
    );
  }
  const r2Ms = performance.now() - r2Started;

  const statements: D1PreparedStatement[] = [];
  const insertAt: number[] = [];
  for (const [i, item] of items.entries()) {
    const { stats, envId, policyVersion, scoresJson } = item.summary;
    insertAt.push(statements.length);
    statements.push(
      ...groupInsertStatements(env.DB, run, {
        envId,
        stats,
        scoresJson,
        policyVersion,
        payloadKey: item.inline === null ? key : "",
        payloadOffset: offsets[i]!,
        payloadBytes: item.payload.byteLength,
        encoding: item.encoding,
        raw: item.raw,
        inline: item.inline,
        dedupeKey: item.dedupeKey,
        idempotencyKey: item.idempotencyKey ?? null,
        tokenId: item.tokenId ?? null,
        now,
        dedupeCutoff: cutoff,
        offline: item.offline === true,
        submission: item.submission,
      }),
      ...besideStatements(env.DB, run, item, cutoff, now),
    );
  }
  const touched = new Set(items.map((it) => it.summary.envId).filter((e) => e !== null));
  for (const envId of touched) statements.push(touchEnvStatement(env.DB, run, envId, now));
  statements.push(emptyEpochStatement(env.DB, run));
  const d1Started = performance.now();
  const results = await env.DB.batch(statements);
  const d1Ms = performance.now() - d1Started;
  const rows = items.map((_, i) => insertedGroupOf(results[insertAt[i]!]));
  const epoch = emptyEpochOf(results.at(-1));
  // Duplicates and unknown envs insert nothing; an object nobody references is removed.
  if (toR2.length > 0 && rows.every((row, i) => row === null || items[i]!.inline !== null)) {
    await env.PAYLOADS.delete(key);
  }
  // Before anyone is answered: the coordinator must not repeat an empty lease answer now (a
  // duplicate too: the copy it retries may have been stored by a commit that failed to say so).
  // It may keep one only under an epoch this isolate has not told it about (storage/empty-epoch.ts).
  const queued = rows.some((row) => row === null || row.status === "queued");
  if (queued && epoch !== null && state.toldEpoch !== epoch) {
    await env.RUN_COORDINATOR.get(env.RUN_COORDINATOR.idFromName(run)).noteQueued();
    state.toldEpoch = epoch;
  }
  return rows.map((row): CommittedItem => ({ row, r2Ms, d1Ms }));
}

/**
 * What an item carries beside its group, written for the group its dedupe key names: the one
 * just inserted, or (a retry) the one an earlier copy stored, so a retry of a submission whose
 * answer was lost writes it again instead of skipping it.
 */
function besideStatements(
  d1: D1Database,
  run: string,
  item: IngestItem,
  dedupeCutoff: number,
  now: number,
): D1PreparedStatement[] {
  const submission = { dedupeKey: item.dedupeKey, dedupeCutoff };
  const { trajectories, tokenTexts } = item.beside ?? { trajectories: null, tokenTexts: null };
  const statements = trajectories
    ? submissionTrajectoryInserts(d1, run, submission, trajectories, now)
    : [];
  const texts = tokenTexts
    ? submissionTokenTextsInsert(d1, run, submission, tokenTexts, now)
    : null;
  if (texts) statements.push(texts);
  return statements;
}

/** What this isolate keeps per run for ingest. */
interface RunIngest {
  /** The run's group commit. */
  commit: GroupCommit<CommitItem, CommittedItem>;
  /**
   * The empty epoch this isolate last told the run's coordinator about. Another isolate's telling
   * is not known here: at worst each isolate tells once per epoch.
   */
  toldEpoch: number | null;
}

// Keyed by the D1 binding, so separate test environments never share one.
const runs = new WeakMap<object, Map<string, RunIngest>>();

function runIngest(env: Bindings, run: string): RunIngest {
  let byRun = runs.get(env.DB);
  if (!byRun) {
    byRun = new Map();
    runs.set(env.DB, byRun);
  }
  let state = byRun.get(run);
  if (!state) {
    const commit = new GroupCommit<CommitItem, CommittedItem>({
      maxItems: COMMIT_MAX_ITEMS,
      maxBytes: COMMIT_MAX_BYTES,
      sizeOf: (item) => item.payload.byteLength,
    });
    state = { commit, toldEpoch: null };
    byRun.set(run, state);
  }
  return state;
}

export async function ingestGroups(
  env: Bindings,
  run: string,
  items: IngestItem[],
  timings: Timings = new Timings(),
  keepAlive?: (work: Promise<unknown>) => void,
): Promise<IngestOutcome[]> {
  for (const [i, item] of items.entries()) {
    const envId = item.summary.envId;
    if (envId !== null && envId < 0) {
      fail([
        {
          type: "greater_than_equal",
          loc: items.length > 1 ? ["body", i, "env_id"] : ["body", "env_id"],
          msg: "env_id must be >= 0 (use the env_id returned by /register-env)",
          input: envId,
        },
      ]);
    }
  }
  // Each insert checks the run's limits for the whole submission (storage/groups.ts): a list's
  // groups are all stored or none, with no read first; a refusal is explained below.
  const submission = {
    longestSeq: items.reduce((most, it) => Math.max(most, it.summary.stats.longestSeq), 0),
    envIdsJson: JSON.stringify([
      ...new Set(items.map((it) => it.summary.envId).filter((e) => e !== null)),
    ]),
  };
  const state = runIngest(env, run);
  const { results, info } = await timings.measure("commit", () =>
    state.commit.submit(
      items.map((item) => ({ ...item, submission })),
      // A leader writes with its own request's bindings: they are bound to its I/O context.
      (all) => writeCommit(env, run, state, all),
      keepAlive,
    ),
  );
  // The commit may have been shared: say with how many, and what its two writes cost.
  timings.describe(
    "commit",
    `${info.items} group${info.items === 1 ? "" : "s"} from ${info.submissions} request${info.submissions === 1 ? "" : "s"}`,
  );
  timings.record("r2", results[0]!.r2Ms);
  timings.record("d1", results[0]!.d1Ms);

  const cutoff = dedupeCutoff(env, clockNow());
  const outcomes: IngestOutcome[] = [];
  for (const [i, item] of items.entries()) {
    const envId = item.summary.envId;
    const row = results[i]!.row;
    if (row) {
      outcomes.push({ groupId: row.id, status: row.status, duplicate: false, envId });
      continue;
    }
    if (item.idempotencyKey !== undefined) {
      const used = await itemKeyAnswer(env.DB, run, item.idempotencyKey);
      if (used) {
        outcomes.push({ groupId: used.groupId ?? -1, status: "queued", duplicate: true, envId });
        continue;
      }
    }
    const prior = await recentSubmission(env.DB, run, item.dedupeKey, cutoff);
    if (prior) {
      outcomes.push({
        groupId: prior.id,
        status: prior.status === "buffered" ? "buffered" : "queued",
        duplicate: true,
        envId,
      });
      continue;
    }
    // Neither stored nor a retry: the run's limits refused the submission (read to say why).
    await explainRefusal(env, run, items);
  }
  return outcomes;
}

/**
 * Why the run's limits refused a submission, read after its commit: a sequence over the
 * trainer's registered max_token_len, or an env id not registered (422). Limits that changed
 * between the commit and this read (a trainer registered, an env joined) refused nothing that
 * would be refused now: 503, send it again. One read.
 */
async function explainRefusal(env: Bindings, run: string, items: IngestItem[]): Promise<never> {
  const loc = (i: number) => (items.length > 1 ? ["body", i] : ["body"]);
  const wanted = [...new Set(items.map((it) => it.summary.envId).filter((e) => e !== null))];
  const limits = await runIngestLimits(env.DB, run, wanted);
  for (const [i, item] of items.entries()) {
    const tooLong = checkSequenceLength(item.summary.stats, limits.maxTokenLen, loc(i));
    if (tooLong) fail([tooLong]);
  }
  const i = items.findIndex(
    (it) => it.summary.envId !== null && !limits.envIds.has(it.summary.envId),
  );
  if (i >= 0) {
    const envId = items[i]!.summary.envId;
    fail([
      {
        type: "value_error",
        loc: [...loc(i), "env_id"],
        msg: `env_id ${envId} is not registered in run '${run}'; call /register-env and use the env_id it returns`,
        input: envId,
      },
    ]);
  }
  throw new ApiError(
    "UNAVAILABLE",
    `run '${run}' changed its limits while this submission was being stored (a trainer registered or an env joined meanwhile); nothing was stored: send it again`,
  );
}
