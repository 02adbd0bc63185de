/**
 * Reading a list of groups (/scored_data_list, replay imports) one group at a time: the body is
 * inflated as a stream and split into its elements (src/core/json-array-split.ts), and each
 * element is parsed, validated and turned into its ingest item before the next is read. Memory
 * holds the items (each group's stored form) and one element's text, never the whole list's
 * object graph; a list with more than MAX_LIST_GROUPS groups is refused with 413 as soon as its
 * next group starts, however much of it is left.
 */
import { ArraySyntaxError, JsonArraySplitter, NotAnArray } from "../core/json-array-split";
import { sha256Hasher } from "../core/sha256";
import { numberVar } from "./bindings";
import { inflateBody, parseJson } from "./body";
import type { AppContext } from "./context";
import { ApiError } from "./errors";
import { fail, validateGroup } from "./group-validation";
import { type IngestItem, ingestItemOf, submissionDedupeKey } from "./ingest";
import { submitterOf } from "./middleware/auth";
import { bodyLimits } from "./request";
import type { SubmissionBody } from "./submission-body";

/** Default MAX_LIST_GROUPS. */
export const MAX_LIST_GROUPS = 1024;

/** Plain bodies are split in slices this large (a gzip body in the pieces it inflates to). */
const SLICE_BYTES = 1 << 20;

export interface GroupList {
  items: IngestItem[];
  /** SHA-256 of the list's JSON text (the body, inflated). */
  hash: string;
}

/** The inflated body's pieces, in order. */
async function* piecesOf(body: SubmissionBody, maxInflated: number): AsyncGenerator<Uint8Array> {
  if (!body.gzip) {
    for (let at = 0; at < body.raw.byteLength; at += SLICE_BYTES) {
      yield body.raw.subarray(at, at + SLICE_BYTES);
    }
    return;
  }
  const stream = new Response(body.raw).body!.pipeThrough(new DecompressionStream("gzip"));
  const reader = stream.getReader();
  let total = 0;
  try {
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch {
        throw new ApiError("INVALID_GZIP", "Invalid gzip payload");
      }
      if (next.done) return;
      total += next.value.byteLength;
      if (total > maxInflated) {
        throw new ApiError(
          "PAYLOAD_TOO_LARGE",
          `decompressed request body exceeds the limit of ${maxInflated} bytes (MAX_INFLATED_BYTES); split the submission (fewer groups per call) or raise the server's limit`,
        );
      }
      yield next.value;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

const decoder = new TextDecoder();

function parseElement(text: Uint8Array, index: number): unknown {
  try {
    return JSON.parse(decoder.decode(text));
  } catch (error) {
    const reason = error instanceof Error ? error.message : "JSON decode error";
    throw new ApiError(
      "VALIDATION_FAILED",
      `group ${index} of the list is not valid JSON: ${reason}`,
      [{ type: "json_invalid", loc: ["body", index], msg: "JSON decode error", input: {} }],
    );
  }
}

/**
 * Reads, validates and builds the ingest items of a list body. `nullEnv`: the groups belong to no
 * env (replay imports). `key`: the request's Idempotency-Key.
 */
export async function readGroupList(
  c: AppContext,
  body: SubmissionBody,
  options: { key: string | undefined; nullEnv?: boolean },
): Promise<GroupList> {
  const limits = bodyLimits(c);
  const maxGroups = numberVar(c.env.MAX_LIST_GROUPS, MAX_LIST_GROUPS);
  const tokenId = submitterOf(c);
  const hasher = sha256Hasher();
  const splitter = new JsonArraySplitter();
  const items: IngestItem[] = [];
  const onElement = (text: Uint8Array) => {
    const i = splitter.count;
    if (i >= maxGroups) {
      throw new ApiError(
        "PAYLOAD_TOO_LARGE",
        `a list may carry at most ${maxGroups} groups (MAX_LIST_GROUPS); this one has more: split it into several calls`,
      );
    }
    const json = parseElement(text, i);
    const group = validateGroup(json, ["body", i]);
    if (options.nullEnv) group.env_id = null;
    items.push(ingestItemOf(group, json, { dedupeKey: "", tokenId, loc: ["body", i] }));
  };
  try {
    for await (const piece of piecesOf(body, limits.maxInflatedBytes)) {
      hasher.update(piece);
      splitter.push(piece, onElement);
    }
    splitter.end();
  } catch (error) {
    if (error instanceof NotAnArray) notAList(body, limits.maxInflatedBytes);
    if (error instanceof ArraySyntaxError) {
      throw new ApiError("VALIDATION_FAILED", `request body is not valid JSON: ${error.message}`, [
        { type: "json_invalid", loc: ["body", 0], msg: "JSON decode error", input: {} },
      ]);
    }
    throw error;
  }
  const hash = hasher.hex();
  for (const [i, item] of items.entries()) {
    item.dedupeKey = submissionDedupeKey(hash, options.key, i);
  }
  return { items, hash };
}

/** A body that is not a JSON array: 422 as the schema says (or json_invalid when not JSON). */
function notAList(body: SubmissionBody, maxInflated: number): never {
  const bytes = body.gzip ? inflateBody(body.raw, maxInflated) : body.raw;
  const json = parseJson(bytes);
  fail([
    {
      type: "list_type",
      loc: ["body"],
      msg: "Input should be a valid list",
      input: json !== null && typeof json === "object" ? "<object>" : json,
    },
  ]);
}
