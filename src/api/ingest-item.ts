/**
 * The one builder of an ingest item: a validated group's stored form (canonical JSON, compressed
 * when large), its summary for D1 and what it carries beside (trajectories, token texts). Every
 * way in builds its items here: POST /scored_data, /scored_data_list, replay import and the
 * in-process submission of the queue path and the inference proxy.
 */

import { deflatePiece, joinPieces } from "../core/codecs/gzip-pieces";
import { canonicalGroupPieces } from "../core/wire/canonical-group";
import { type GroupStats, groupStats } from "../core/wire/group-stats";
import type { ScoredDataInput } from "../core/wire/schemas";
import type { Trajectory } from "../core/wire/trajectory";
import { trajectoriesOfSubmission } from "./group-validation";
import { INLINE_MAX_BYTES, PLAIN_MAX_BYTES, toBase64 } from "./storage/payloads";

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
 * its base64 fits, else in R2. Float rows are compressed as pieces of their own, by Huffman
 * coding alone (see deflatePiece); the rest with LZ77, which finds a group's shared prompt.
 */
export function canonicalPayloadOf(group: ScoredDataInput): StoredPayload {
  const segments: { text: string; floats: boolean }[] = [];
  let chars = 0;
  for (const piece of canonicalGroupPieces(group, group.env_id ?? null)) {
    const last = segments.at(-1);
    if (last?.floats === piece.floats) last.text += piece.text;
    else segments.push({ ...piece });
    chars += piece.text.length;
  }
  if (chars <= PLAIN_MAX_BYTES) {
    const json = segments.map((s) => s.text).join("");
    const bytes = textEncoder.encode(json) as Uint8Array<ArrayBuffer>;
    if (bytes.byteLength <= PLAIN_MAX_BYTES) {
      return { payload: bytes, encoding: "canonical", inline: json, raw: null };
    }
  }
  const piece = joinPieces(segments.map((s) => deflatePiece(textEncoder.encode(s.text), s.floats)));
  const inline = Math.ceil(piece.data.byteLength / 3) * 4 <= INLINE_MAX_BYTES;
  return {
    payload: piece.data as Uint8Array<ArrayBuffer>,
    encoding: "deflate",
    inline: inline ? toBase64(piece.data) : null,
    raw: { length: piece.length, crc32: piece.crc32 },
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
  /** "deflate": `payload` is that JSON as one raw-deflate piece (src/core/codecs/gzip-pieces.ts). */
  encoding: "canonical" | "deflate";
  /** What D1 keeps when the payload is not in R2: the JSON, or the piece in base64. */
  inline: string | null;
  /** "deflate": the JSON's length and CRC-32. */
  raw: { length: number; crc32: number } | null;
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
  /**
   * Offline data for the replay buffer (POST …/replay/groups): stored as delivered, so the online
   * queue never holds it, not even for the moment before it joins the buffer.
   */
  offline?: boolean;
}

/** What a submission carries beside its 14 keys, stored next to the group it became. */
export interface BesideGroup {
  trajectories: readonly Trajectory[] | null;
  tokenTexts: string[][] | null;
}

/**
 * The one ingest item of a validated group: its stored form, summary and what it carries beside.
 * `json` is the group as submitted (its trajectories are read from it).
 */
export function ingestItemOf(
  group: ScoredDataInput,
  json: unknown,
  options: {
    dedupeKey: string;
    tokenId?: string | null;
    loc?: (string | number)[];
    /** The trajectories beside the group, when the caller already checked them. */
    trajectories?: Trajectory[] | null;
  },
): IngestItem {
  const trajectories =
    options.trajectories !== undefined
      ? options.trajectories
      : trajectoriesOfSubmission(json, group.tokens.length, options.loc);
  return {
    summary: summarizeGroup(group),
    ...canonicalPayloadOf(group),
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
