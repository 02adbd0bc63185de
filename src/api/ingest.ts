/**
 * Ingest of scored groups: validate, canonicalise once (the stored bytes are what delivery
 * sends), write large payloads to R2, then record the group in D1 in one statement that also
 * dedupes retries, picks the buffered/queued state and stamps the policy version (the SQL is in
 * src/api/storage/groups.ts; a payload kept in D1 goes into group_payloads in the same
 * transaction, and so do its trajectories and token texts). A 200 is only sent after both
 * writes, so an acknowledged group, and everything it carried, survives any restart.
 *
 * Retries are recognised per submission, never per group content: each group carries a dedupe
 * key naming its request (Idempotency-Key, else the SHA-256 of the whole body) and its position
 * in it. Identical groups of one request differ in position, so all are stored; a resent request
 * matches its earlier copy within DEDUPE_WINDOW_SECONDS. The body names the env_id of every
 * group, so the same body from another env is another submission.
 */

import { canonicalGroupJson } from "../core/canonical-group";
import { GroupCommit } from "../core/group-commit";
import { checkSequenceLength } from "../core/group-rules";
import { type GroupStats, groupStats } from "../core/group-stats";
import { deflatePiece } from "../core/gzip-pieces";
import type { ScoredDataInput } from "../core/schemas";
import { sha256Hex } from "../core/sha256";
import type { Trajectory } from "../core/trajectory";
import { type Bindings, numberVar } from "./bindings";
import { fail, trajectoriesOfSubmission, validateGroup } from "./group-validation";
import {
  groupInsertStatements,
  itemKeyAnswer,
  recentSubmission,
  runIngestLimits,
  touchEnvStatement,
} from "./storage/groups";
import {
  INLINE_MAX_BYTES,
  PLAIN_MAX_BYTES,
  payloadKey,
  putPayload,
  toBase64,
} from "./storage/payloads";
import { submissionTokenTextsInsert } from "./storage/token-texts";
import { submissionTrajectoryInserts } from "./storage/trajectories";
import { Timings } from "./timings";

/** What D1 records about a group: the parsed group itself is not held while a commit waits. */
export interface GroupSummary {
  envId: number | null;
  policyVersion: number | null;
  stats: GroupStats;
  scoresJson: string;
}

const textEncoder = new TextEncoder();

/** How a group is stored: see IngestItem. */
export type StoredPayload = Pick<IngestItem, "payload" | "encoding" | "inline" | "raw">;

/**
 * The stored form of a validated group (src/api/storage/payloads.ts): small JSON as text, larger
 * JSON as one raw-deflate piece (compressed once here, sent to gzip clients as it is), in D1 while
 * its base64 fits, else in R2. `hash`: also the SHA-256 of the JSON.
 */
export function canonicalPayloadOf(group: ScoredDataInput): StoredPayload;
export function canonicalPayloadOf(
  group: ScoredDataInput,
  options: { hash: true },
): StoredPayload & { sha256: string };
export function canonicalPayloadOf(
  group: ScoredDataInput,
  options: { hash?: boolean } = {},
): StoredPayload & { sha256?: string } {
  const json = canonicalGroupJson(group, group.env_id ?? null);
  const bytes = textEncoder.encode(json) as Uint8Array<ArrayBuffer>;
  const sha256 = options.hash ? sha256Hex(bytes) : undefined;
  if (bytes.byteLength <= PLAIN_MAX_BYTES) {
    return { payload: bytes, encoding: "canonical", inline: json, raw: null, sha256 };
  }
  const piece = deflatePiece(bytes);
  const inline = Math.ceil(piece.data.byteLength / 3) * 4 <= INLINE_MAX_BYTES;
  return {
    payload: piece.data as Uint8Array<ArrayBuffer>,
    encoding: "deflate",
    inline: inline ? toBase64(piece.data) : null,
    raw: { length: piece.length, crc32: piece.crc32 },
    sha256,
  };
}

export function summarizeGroup(group: ScoredDataInput): GroupSummary {
  return {
    envId: group.env_id ?? null,
    policyVersion: group.policy_version ?? null,
    stats: groupStats(group),
    scoresJson: JSON.stringify(group.scores),
  };
}

export interface IngestItem {
  summary: GroupSummary;
  /** The group's canonical JSON (what delivery sends) as stored: UTF-8, or compressed. */
  payload: Uint8Array<ArrayBuffer>;
  /** "deflate": `payload` is that JSON as one raw-deflate piece (src/core/gzip-pieces.ts). */
  encoding: "canonical" | "deflate";
  /** What D1 keeps when the payload is not in R2: the JSON, or the piece in base64. */
  inline: string | null;
  /** "deflate": the JSON's length and CRC-32. */
  raw: { length: number; crc32: number } | null;
  /** SHA-256 of the group's JSON text as submitted. */
  contentHash: string;
  /** Names the submission and the group's position in it (see submissionDedupeKey). */
  dedupeKey: string;
  /**
   * Makes the insert conditional on this key being unused and records it in the same
   * transaction, so two deliveries of one queue item can never both store a group.
   */
  idempotencyKey?: string;
  /** The API token that submitted it (null: API_TOKEN, open local dev, env workers in process). */
  tokenId?: string | null;
  /** Trajectories and token texts, written in the group's own commit. */
  beside?: BesideGroup;
}

export interface IngestOutcome {
  groupId: number;
  status: "queued" | "buffered";
  duplicate: boolean;
  envId: number | null;
}

/** What a submission carries beside its 14 keys, stored next to the group it became. */
export interface BesideGroup {
  trajectories: readonly Trajectory[] | null;
  tokenTexts: string[][] | null;
}

/**
 * The one ingest item of a validated group: its stored form, summary and what it carries beside.
 * `json` is the group as submitted (its trajectories are read from it); `contentHash` the SHA-256
 * of its JSON text when known, else computed here.
 */
export function ingestItemOf(
  group: ScoredDataInput,
  json: unknown,
  options: {
    dedupeKey: string;
    contentHash?: string;
    tokenId?: string | null;
    loc?: (string | number)[];
  },
): IngestItem {
  const trajectories = trajectoriesOfSubmission(json, group.tokens.length, options.loc);
  const { sha256, ...stored } =
    options.contentHash === undefined
      ? canonicalPayloadOf(group, { hash: true })
      : { ...canonicalPayloadOf(group), sha256: options.contentHash };
  return {
    summary: summarizeGroup(group),
    ...stored,
    contentHash: sha256,
    dedupeKey: options.dedupeKey,
    tokenId: options.tokenId ?? null,
    beside: { trajectories, tokenTexts: group.token_texts ?? null },
  };
}

/**
 * The dedupe key of the `index`-th group of a request: its Idempotency-Key, else the body's SHA-256,
 * per submitting token (null: API_TOKEN, open dev, the Worker: the run-wide key Atropos expects).
 */
export function submissionDedupeKey(
  bodyHash: string,
  idempotencyKey: string | undefined,
  index: number,
  tokenId: string | null,
): string {
  const key = idempotencyKey === undefined ? `body:${bodyHash}` : `key:${idempotencyKey}`;
  return tokenId === null ? `${key}#${index}` : `token:${tokenId}/${key}#${index}`;
}

interface StoredRow {
  id: number;
  status: "queued" | "buffered";
}

/** One item's fate in a commit: its new row (null: not inserted) and the commit's timings. */
interface CommittedItem {
  row: StoredRow | null;
  r2Ms: number;
  d1Ms: number;
}

/** A submission stored after this time is what a resend of it is a retry of (DEDUPE_WINDOW_SECONDS). */
function dedupeCutoff(env: Bindings, now: number): number {
  return now - numberVar(env.DEDUPE_WINDOW_SECONDS, 120) * 1000;
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
async function writeCommit(env: Bindings, run: string, items: IngestItem[]) {
  const now = Date.now();
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
        contentHash: item.contentHash,
        dedupeKey: item.dedupeKey,
        idempotencyKey: item.idempotencyKey ?? null,
        tokenId: item.tokenId ?? null,
        now,
        dedupeCutoff: cutoff,
      }),
      ...besideStatements(env.DB, run, item, cutoff, now),
    );
  }
  const touched = new Set(items.map((it) => it.summary.envId).filter((e) => e !== null));
  for (const envId of touched) statements.push(touchEnvStatement(env.DB, run, envId, now));
  const d1Started = performance.now();
  const results = await env.DB.batch<StoredRow>(statements);
  const d1Ms = performance.now() - d1Started;
  const rows = items.map((_, i) => results[insertAt[i]!]?.results[0] ?? null);
  // Duplicates and unknown envs insert nothing; an object nobody references is removed.
  if (toR2.length > 0 && rows.every((row, i) => row === null || items[i]!.inline !== null)) {
    await env.PAYLOADS.delete(key);
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

// One group commit per run per isolate (keyed by the D1 binding, so separate test environments
// never share one).
const commits = new WeakMap<object, Map<string, GroupCommit<IngestItem, CommittedItem>>>();

function groupCommitFor(env: Bindings, run: string): GroupCommit<IngestItem, CommittedItem> {
  let byRun = commits.get(env.DB);
  if (!byRun) {
    byRun = new Map();
    commits.set(env.DB, byRun);
  }
  let commit = byRun.get(run);
  if (!commit) {
    commit = new GroupCommit<IngestItem, CommittedItem>({
      maxItems: COMMIT_MAX_ITEMS,
      maxBytes: COMMIT_MAX_BYTES,
      sizeOf: (item) => item.payload.byteLength,
    });
    byRun.set(run, commit);
  }
  return commit;
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
  await requireRunLimits(env, run, items);
  const { results, info } = await timings.measure("commit", () =>
    groupCommitFor(env, run).submit(
      items,
      // A leader writes with its own request's bindings: they are bound to its I/O context.
      (all) => writeCommit(env, run, all),
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

  const cutoff = dedupeCutoff(env, Date.now());
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
    fail([
      {
        type: "value_error",
        loc: items.length > 1 ? ["body", i, "env_id"] : ["body", "env_id"],
        msg: `env_id ${envId} is not registered in run '${run}'; call /register-env and use the env_id it returns`,
        input: envId,
      },
    ]);
  }
  return outcomes;
}

/**
 * Checks what needs the run before anything is written: every sequence within the trainer's
 * registered max_token_len, and (lists are all-or-nothing) every env id registered. One read.
 */
async function requireRunLimits(env: Bindings, run: string, items: IngestItem[]) {
  const loc = (i: number) => (items.length > 1 ? ["body", i] : ["body"]);
  const wanted =
    items.length > 1
      ? [...new Set(items.map((it) => it.summary.envId).filter((e) => e !== null))]
      : [];
  const limits = await runIngestLimits(env.DB, run, wanted);
  for (const [i, item] of items.entries()) {
    const tooLong = checkSequenceLength(item.summary.stats, limits.maxTokenLen, loc(i));
    if (tooLong) fail([tooLong]);
  }
  const i = items.findIndex(
    (it) => it.summary.envId !== null && wanted.length > 0 && !limits.envIds.has(it.summary.envId),
  );
  if (i >= 0) {
    const envId = items[i]!.summary.envId;
    fail([
      {
        type: "value_error",
        loc: ["body", i, "env_id"],
        msg: `env_id ${envId} is not registered in run '${run}'; call /register-env and use the env_id it returns`,
        input: envId,
      },
    ]);
  }
}

/**
 * Submission from inside the Worker (queue consumers): same validation, storage and dedupe as
 * POST /scored_data, without an HTTP hop. `idempotencyKey` makes a redelivered queue message a no-op;
 * `tokenId` attributes the group (a finished proxy session: the token that finished it).
 */
export async function submitGroupInProcess(
  env: Bindings,
  run: string,
  group: unknown,
  idempotencyKey: string,
  tokenId: string | null = null,
): Promise<{ status: "received" | "buffered" | "duplicate"; groupId?: number }> {
  const item = ingestItemOf(validateGroup(group), group, {
    dedupeKey: submissionDedupeKey("", idempotencyKey, 0, null),
    tokenId,
  });
  const [outcome] = await ingestGroups(env, run, [{ ...item, idempotencyKey }]);
  if (outcome!.status === "buffered" && outcome!.envId !== null) {
    await env.RUN_COORDINATOR.get(env.RUN_COORDINATOR.idFromName(run)).releaseBuffered(
      run,
      outcome!.envId,
    );
  }
  return {
    status: outcome!.duplicate
      ? "duplicate"
      : outcome!.status === "buffered"
        ? "buffered"
        : "received",
    groupId: outcome!.groupId,
  };
}
