/**
 * Reading a list of groups (/scored_data_list, replay imports) one group at a time: the body is
 * split into its elements as it arrives (a plain body) or as it inflates (a gzip body, read first:
 * its compressed bytes are the small part), and each element is parsed, validated and turned into
 * its ingest item before the next is read. Memory holds the items (each group's stored form) and
 * one element's text, never the whole list's text or object graph; a list with more than
 * MAX_LIST_GROUPS groups is refused with 413 as soon as its next group starts, however much of it
 * is left to send. The memory budget is charged element by element, by the element's text (a gzip
 * body's inflated text).
 */
import { concatBytes } from "../core/codecs/bytes";
import { ArraySyntaxError, JsonArraySplitter, NotAnArray } from "../core/codecs/json-array-split";
import { sha256Hasher } from "../core/codecs/sha256";
import { chunksOf, inflateBody, isGzipEncoded, parseJson, refuseTooDeep } from "./body";
import type { AppContext } from "./context";
import { ApiError } from "./errors";
import { fail, validateGroup } from "./group-validation";
import { type IngestItem, ingestItemOf, submissionDedupeKey } from "./ingest-item";
import { memoryCost, withMemory } from "./memory-budget";
import { submitterOf } from "./middleware/auth";
import { chargeBytes } from "./middleware/quotas";
import { bodyLimits } from "./request";
import { settingsOf } from "./settings";
import { readSubmissionBody, refuseBeforeReading } from "./submission-body";

export interface GroupList {
  items: IngestItem[];
  /** SHA-256 of the list's JSON text (the body, inflated). */
  hash: string;
}

/** A gzip body's inflated pieces, in order. */
async function* inflatedPieces(
  raw: Uint8Array<ArrayBuffer>,
  maxInflated: number,
): AsyncGenerator<Uint8Array> {
  const stream = new Response(raw).body!.pipeThrough(new DecompressionStream("gzip"));
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
  const json = decoder.decode(text);
  refuseTooDeep(json, ["body", index]);
  try {
    return JSON.parse(json);
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
 * Reads, validates and builds the ingest items of a list body. `offline`: replay imports, whose
 * groups belong to no env and are stored as delivered. `key`: the request's Idempotency-Key.
 */
export async function readGroupList(
  c: AppContext,
  options: { key: string | undefined; offline?: boolean },
): Promise<GroupList> {
  const limits = bodyLimits(c);
  const maxGroups = settingsOf(c.env).MAX_LIST_GROUPS;
  const tokenId = submitterOf(c);
  const hasher = sha256Hasher();
  const splitter = new JsonArraySplitter();
  const items: IngestItem[] = [];
  const elements: Uint8Array[] = [];
  const onElement = (text: Uint8Array) => {
    if (splitter.count >= maxGroups) {
      throw new ApiError(
        "PAYLOAD_TOO_LARGE",
        `a list may carry at most ${maxGroups} groups (MAX_LIST_GROUPS); this one has more: split it into several calls`,
      );
    }
    elements.push(text);
  };
  const build = () => {
    for (const text of elements.splice(0)) {
      const i = items.length;
      const json = parseElement(text, i);
      const group = validateGroup(json, ["body", i]);
      if (options.offline) group.env_id = null;
      const item = ingestItemOf(group, json, { dedupeKey: "", tokenId, loc: ["body", i] });
      items.push(options.offline ? { ...item, offline: true } : item);
    }
  };
  let first = true;
  /** Feeds one piece of the list's text; its elements are parsed under the memory budget. */
  const feed = async (data: Uint8Array) => {
    // A UTF-8 byte order mark before the list is skipped, as /scored_data's decoder does.
    const piece = first && startsWithBom(data) ? data.subarray(3) : data;
    first = false;
    hasher.update(piece);
    splitter.push(piece, onElement);
    if (elements.length === 0) return;
    const bytes = elements.reduce((sum, e) => sum + e.byteLength, 0);
    await withMemory(c.env, memoryCost(bytes, false), async () => build());
  };
  try {
    if (isGzipEncoded(c.req.raw)) {
      const body = await readSubmissionBody(c);
      // Charged by the inflated text, group by group as it inflates (a stream: the whole list's
      // text is never held), so a small gzip of a huge list cannot run on its compressed size.
      const pieces = body.gzip ? inflatedPieces(body.raw, limits.maxInflatedBytes) : [body.raw];
      try {
        for await (const piece of pieces) await feed(piece);
      } catch (error) {
        if (error instanceof NotAnArray) notAList(inflateBody(body.raw, limits.maxInflatedBytes));
        throw error;
      }
    } else {
      await refuseBeforeReading(c);
      let arrived = 0;
      // Set when the body turns out not to be a list: the rest is kept to say what it is.
      const notArray: Uint8Array[] = [];
      const body = c.req.raw.body;
      const pieces = body
        ? chunksOf(body, limits.maxBodyBytes, limits.idleTimeoutMs, "request body")
        : [];
      for await (const piece of pieces) {
        arrived += piece.byteLength;
        if (notArray.length > 0) notArray.push(piece);
        else {
          await feed(piece).catch((error: unknown) => {
            if (!(error instanceof NotAnArray)) throw error;
            notArray.push(piece);
          });
        }
      }
      await chargeBytes(c, arrived);
      if (notArray.length > 0) notAList(concatBytes(notArray));
    }
    splitter.end();
  } catch (error) {
    if (error instanceof NotAnArray) notAList(new Uint8Array(0));
    if (error instanceof ArraySyntaxError) {
      throw new ApiError("VALIDATION_FAILED", `request body is not valid JSON: ${error.message}`, [
        { type: "json_invalid", loc: ["body", 0], msg: "JSON decode error", input: {} },
      ]);
    }
    throw error;
  }
  const hash = hasher.hex();
  for (const [i, item] of items.entries()) {
    item.dedupeKey = submissionDedupeKey(hash, options.key, i, tokenId);
  }
  return { items, hash };
}

function startsWithBom(bytes: Uint8Array): boolean {
  return bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
}

/** A body that is not a JSON array: 422 as the schema says (or json_invalid when not JSON). */
function notAList(bytes: Uint8Array): never {
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
