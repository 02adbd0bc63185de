/**
 * Group payloads: each group's canonical JSON (the form it is served in), written once at
 * ingest. Up to PLAIN_MAX_BYTES it is kept as text in D1 beside its row (`group_payloads`,
 * "canonical"); larger JSON is kept as one raw-deflate piece (src/core/codecs/gzip-pieces.ts,
 * "deflate"), base64 in `group_payloads` while that fits INLINE_MAX_BYTES, else in R2, where
 * groups committed together share one object and each row records its offset and length. Rows
 * stored before that hold the JSON uncompressed ("canonical") or as the env sent it ("identity",
 * "gzip").
 */
import { Buffer } from "node:buffer";
import { z } from "zod";
import { gunzipBounded } from "../../core/codecs/gzip";
import { inflatePiece } from "../../core/codecs/gzip-pieces";

/** Canonical JSON up to this many bytes is stored in D1 as it is (plain text). */
export const PLAIN_MAX_BYTES = 8 * 1024;

/** Larger JSON is compressed; a piece whose base64 is at most this long stays in D1, else R2. */
export const INLINE_MAX_BYTES = 128 * 1024;

export function payloadKey(run: string): string {
  return `runs/${run}/groups/${crypto.randomUUID()}`;
}

/** Where one group's bytes are (inline, or a byte range of an R2 object), and their form. */
export interface PayloadLocation {
  key: string;
  offset: number;
  length: number;
  encoding: "canonical" | "deflate" | "identity" | "gzip";
  /** What is stored in D1: the JSON ("canonical"), or the piece in base64 ("deflate"). */
  inline: string | null;
  /** "deflate": the JSON's length and CRC-32 (what the stored piece inflates to). */
  raw: { length: number; crc32: number } | null;
}

/** A group as delivery needs it: where its payload is, plus what the batch header reports. */
export interface LeasedGroupRef {
  id: number;
  envId: number | null;
  payload: PayloadLocation;
  policyVersion: number;
  numSeqs: number;
  /** Taken from the replay buffer (delivered before) rather than the queue. */
  replayed?: boolean;
}

/**
 * The columns a `LeasedGroupRef` is built from, for `SELECT … FROM groups g ${GROUP_PAYLOAD_JOIN}`.
 */
export const GROUP_REF_COLUMNS =
  "g.id, g.env_id, g.payload_key, g.payload_encoding, g.payload_offset, g.payload_bytes, g.raw_bytes, g.raw_crc32, p.body AS payload_inline, g.policy_version, g.num_seqs";

/** Joins a group (`g`) to its inline payload (`p`), when it has one. */
export const GROUP_PAYLOAD_JOIN = "LEFT JOIN group_payloads p ON p.group_id = g.id";

/** Removes the inline payloads of deleted groups. */
export function deleteInlinePayloads(
  d1: D1Database,
  groupIds: readonly number[],
): D1PreparedStatement {
  // One bound JSON list: D1 caps a statement's bound parameters at 100.
  return d1
    .prepare("DELETE FROM group_payloads WHERE group_id IN (SELECT value FROM json_each(?1))")
    .bind(JSON.stringify(groupIds));
}

export const groupRefRowSchema = z.object({
  id: z.number(),
  env_id: z.number().nullable(),
  payload_key: z.string(),
  payload_encoding: z.enum(["canonical", "deflate", "identity", "gzip"]),
  payload_offset: z.number(),
  payload_bytes: z.number(),
  raw_bytes: z.number().nullable(),
  raw_crc32: z.number().nullable(),
  payload_inline: z.string().nullable(),
  policy_version: z.number(),
  num_seqs: z.number(),
});
export type GroupRefRow = z.infer<typeof groupRefRowSchema>;

export function groupRef(row: GroupRefRow): LeasedGroupRef {
  return {
    id: row.id,
    envId: row.env_id,
    payload: {
      key: row.payload_key,
      offset: row.payload_offset,
      length: row.payload_bytes,
      encoding: row.payload_encoding,
      inline: row.payload_inline,
      raw:
        row.raw_bytes !== null && row.raw_crc32 !== null
          ? { length: row.raw_bytes, crc32: row.raw_crc32 }
          : null,
    },
    policyVersion: row.policy_version,
    numSeqs: row.num_seqs,
  };
}

/** Writes one object holding `parts` back to back (one payload, or a commit's payloads). */
export async function putPayload(
  bucket: R2Bucket,
  key: string,
  parts: Uint8Array<ArrayBuffer> | Uint8Array<ArrayBuffer>[],
): Promise<void> {
  await bucket.put(key, Array.isArray(parts) ? new Blob(parts) : parts, {
    httpMetadata: { contentType: "application/octet-stream" },
  });
}

const encoder = new TextEncoder();

export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

export function fromBase64(text: string): Uint8Array {
  const bytes = Buffer.from(text, "base64");
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The payload's bytes as stored (a "deflate" piece stays compressed). */
export async function getStoredBytes(
  bucket: R2Bucket,
  location: PayloadLocation,
): Promise<Uint8Array> {
  const { key, offset, length, inline } = location;
  if (inline !== null) {
    return location.encoding === "deflate" ? fromBase64(inline) : encoder.encode(inline);
  }
  const object = await bucket.get(key, { range: { offset, length } });
  if (!object) throw new Error(`payload ${key} is missing from R2`);
  return new Uint8Array(await object.arrayBuffer());
}

/** Returns the payload's JSON text bytes (inflated if stored compressed). */
export async function getPayloadBytes(
  bucket: R2Bucket,
  location: PayloadLocation,
): Promise<Uint8Array> {
  const stored = await getStoredBytes(bucket, location);
  // Stored payloads were inflated within the body limits once already, at ingest.
  if (location.encoding === "gzip") return gunzipBounded(stored);
  if (location.encoding === "deflate") return inflatePiece(stored);
  return stored;
}

export async function deletePayloadPrefix(bucket: R2Bucket, prefix: string): Promise<void> {
  let cursor: string | undefined;
  do {
    const listing = await bucket.list({ prefix, cursor, limit: 1000 });
    const keys = listing.objects.map((o) => o.key);
    if (keys.length > 0) await bucket.delete(keys);
    cursor = listing.truncated ? listing.cursor : undefined;
  } while (cursor);
}
