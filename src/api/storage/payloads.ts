/**
 * Group payloads: each group's canonical JSON (the form it is served in), written once at
 * ingest. Small payloads live in D1 beside their row (`group_payloads`); larger ones in R2, where groups
 * committed together share one object and each row records its payload's offset and length.
 * Rows stored before canonical storage hold the JSON as the env sent it (possibly gzip).
 */
import { gunzipBounded } from "../../core/gzip";

/** Canonical payloads up to this many bytes are stored in their D1 row instead of R2. */
export const INLINE_MAX_BYTES = 128 * 1024;

export function payloadKey(run: string): string {
  return `runs/${run}/groups/${crypto.randomUUID()}`;
}

/** Where one group's bytes are (inline, or a byte range of an R2 object), and their form. */
export interface PayloadLocation {
  key: string;
  offset: number;
  length: number;
  encoding: "canonical" | "identity" | "gzip";
  /** The canonical JSON itself when stored in the row. */
  inline: string | null;
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
  "g.id, g.env_id, g.payload_key, g.payload_encoding, g.payload_offset, g.payload_bytes, p.body AS payload_inline, g.policy_version, g.num_seqs";

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

export interface GroupRefRow {
  id: number;
  env_id: number | null;
  payload_key: string;
  payload_encoding: "canonical" | "identity" | "gzip";
  payload_offset: number;
  payload_bytes: number;
  payload_inline: string | null;
  policy_version: number;
  num_seqs: number;
}

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

/** Returns the payload's JSON text bytes (inflated if stored compressed). */
export async function getPayloadBytes(
  bucket: R2Bucket,
  location: PayloadLocation,
): Promise<Uint8Array> {
  const { key, offset, length, encoding, inline } = location;
  if (inline !== null) return encoder.encode(inline);
  const object = await bucket.get(key, { range: { offset, length } });
  if (!object) throw new Error(`payload ${key} is missing from R2`);
  const stored = new Uint8Array(await object.arrayBuffer());
  // Stored payloads were inflated within the body limits once already, at ingest.
  return encoding === "gzip" ? gunzipBounded(stored) : stored;
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
