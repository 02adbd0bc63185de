/**
 * Streams a leased batch to the trainer, one group at a time, so memory stays flat whatever the
 * batch size (a batch of 64 × 8k-token sequences with logprobs is ~15 MB of JSON). Groups are
 * stored in their served (canonical) form, so their bytes are sent as stored (large ones are
 * stored compressed: a gzip client gets them as they are, others inflated); rows stored before
 * that hold the env's JSON, which is parsed and canonicalised here in chunks of about 64 KB.
 */

import { concatBytes } from "../core/codecs/bytes";
import { type DeflatePiece, GzipAssembler, inflatePiece } from "../core/codecs/gzip-pieces";
import { canonicalGroupJson, canonicalGroupPieces } from "../core/wire/canonical-group";
import { type ScoredDataInput, scoredDataSchema } from "../core/wire/schemas";
import type { Bindings } from "./bindings";
import type { AppContext } from "./context";
import type { TimedLeaseOutcome } from "./coordinator-lease";
import { memoryCost, withMemory } from "./memory-budget";
import { acceptsGzip } from "./request";
import type { LeasedGroupRef } from "./storage/payloads";
import { fromBase64, getPayloadBytes, getStoredBytes } from "./storage/payloads";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const CHUNK_CHARS = 64 * 1024;

/** A row stored before canonical storage: the env's JSON, validated again as it is served. */
async function readLegacyGroup(env: Bindings, ref: LeasedGroupRef): Promise<ScoredDataInput> {
  const bytes = await getPayloadBytes(env.PAYLOADS, ref.payload);
  // Parsed again (not trusted as stored): lax values a client sent ("5") come out canonical.
  return scoredDataSchema.parse(JSON.parse(decoder.decode(bytes)));
}

function memoryCostOf(ref: LeasedGroupRef): number {
  if (ref.payload.encoding === "canonical") return ref.payload.length;
  if (ref.payload.encoding === "deflate") return ref.payload.raw?.length ?? ref.payload.length * 8;
  return memoryCost(ref.payload.length, ref.payload.encoding === "gzip");
}

/** Whether the payload is the canonical JSON (possibly compressed), not the env's own JSON. */
function isCanonical(ref: LeasedGroupRef): boolean {
  return ref.payload.encoding === "canonical" || ref.payload.encoding === "deflate";
}

/** One group's canonical JSON as a string (single-group endpoints). */
export function canonicalPayload(env: Bindings, ref: LeasedGroupRef): Promise<string> {
  if (ref.payload.encoding === "canonical" && ref.payload.inline !== null) {
    return Promise.resolve(ref.payload.inline);
  }
  return withMemory(env, memoryCostOf(ref), async () =>
    isCanonical(ref)
      ? decoder.decode(await getPayloadBytes(env.PAYLOADS, ref.payload))
      : canonicalGroupJson(await readLegacyGroup(env, ref), ref.envId),
  );
}

/** One group's canonical JSON as UTF-8 chunks of about CHUNK_CHARS characters. */
function canonicalPayloadChunks(env: Bindings, ref: LeasedGroupRef): Promise<Uint8Array[]> {
  if (isCanonical(ref)) {
    return withMemory(env, memoryCostOf(ref), async () => [
      await getPayloadBytes(env.PAYLOADS, ref.payload),
    ]);
  }
  return withMemory(env, memoryCostOf(ref), async () => {
    const chunks: Uint8Array[] = [];
    let pending = "";
    for (const piece of canonicalGroupPieces(await readLegacyGroup(env, ref), ref.envId)) {
      pending += piece.text;
      if (pending.length >= CHUNK_CHARS) {
        chunks.push(encoder.encode(pending));
        pending = "";
      }
    }
    if (pending.length > 0) chunks.push(encoder.encode(pending));
    return chunks;
  });
}

/** Bytes or text to send, or (gzip) a stored piece to send without compressing again. */
type Part = { raw: Uint8Array } | { text: string } | { piece: DeflatePiece };

/** One group's parts: its stored piece when it has one and the client takes gzip. */
function groupParts(env: Bindings, ref: LeasedGroupRef, gzip: boolean): Promise<Part[]> {
  const { payload } = ref;
  if (gzip && payload.encoding === "deflate" && payload.raw) {
    const raw = payload.raw;
    return withMemory(env, payload.length, async () => [
      { piece: { data: await getStoredBytes(env.PAYLOADS, payload), ...raw } },
    ]);
  }
  return canonicalPayloadChunks(env, ref).then((chunks) => chunks.map((raw) => ({ raw })));
}

/**
 * `prefix` + comma-separated canonical groups + `suffix`: one string when every group is stored
 * inline uncompressed (small, and already in memory), else streamed; `gzip`, for a client that
 * accepts gzip, sends one gzip member made of the groups' stored pieces
 * (src/core/codecs/gzip-pieces.ts), assembled in memory when every piece came with the lease.
 */
export function batchBody(
  env: Bindings,
  groups: LeasedGroupRef[],
  prefix: string,
  suffix: string,
  gzip = false,
): string | Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> {
  // One join of every part: a template around an inner join would allocate the body twice (the
  // runtime flattens the concatenation again when it takes the string).
  const parts: string[] = [prefix];
  for (const g of groups) {
    if (g.payload.encoding !== "canonical" || g.payload.inline === null) {
      const inMemory = gzip ? inlineGzipBody(groups, prefix, suffix) : null;
      return inMemory ?? streamGroups(env, groups, prefix, suffix, gzip);
    }
    if (parts.length > 1) parts.push(",");
    parts.push(g.payload.inline);
  }
  parts.push(suffix);
  return parts.join("");
}

/**
 * The gzip member `streamGroups` would send, assembled in memory, when every group's stored piece
 * is already here (kept in D1, read with the lease): one body of known length, no stream. Null
 * when one is not (in R2, or stored uncompressed).
 */
function inlineGzipBody(
  groups: LeasedGroupRef[],
  prefix: string,
  suffix: string,
): Uint8Array<ArrayBuffer> | null {
  const gz = new GzipAssembler();
  const chunks: Uint8Array[] = [...gz.text(prefix)];
  for (const [i, { payload }] of groups.entries()) {
    if (payload.encoding !== "deflate" || payload.inline === null || !payload.raw) return null;
    if (i > 0) chunks.push(...gz.text(","));
    chunks.push(...gz.piece({ data: fromBase64(payload.inline), ...payload.raw }));
  }
  chunks.push(...gz.text(suffix), ...gz.end());
  return concatBytes(chunks);
}

/** `prefix` + comma-separated canonical groups + `suffix`, streamed (gzip: one gzip member). */
export function streamGroups(
  env: Bindings,
  groups: LeasedGroupRef[],
  prefix: string,
  suffix: string,
  gzip = false,
): ReadableStream<Uint8Array> {
  const gz = gzip ? new GzipAssembler() : null;
  const send = (controller: ReadableStreamDefaultController<Uint8Array>, parts: Part[]) => {
    for (const part of parts) {
      if ("piece" in part) {
        for (const bytes of gz ? gz.piece(part.piece) : [inflatePiece(part.piece.data)]) {
          controller.enqueue(bytes);
        }
      } else if ("text" in part) {
        for (const bytes of gz ? gz.text(part.text) : [encoder.encode(part.text)]) {
          controller.enqueue(bytes);
        }
      } else {
        for (const bytes of gz ? gz.raw(part.raw) : [part.raw]) controller.enqueue(bytes);
      }
    }
  };
  const text = (value: string): Part[] => [{ text: value }];
  let index = -1;
  // Prefetch one group ahead so R2 reads overlap with sending the previous group.
  let nextGroup: Promise<Part[]> | null =
    groups.length > 0 ? groupParts(env, groups[0]!, gzip) : null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (index === -1) {
          send(controller, text(prefix));
          index = 0;
          return;
        }
        if (index < groups.length && nextGroup) {
          const parts = await nextGroup;
          index++;
          nextGroup = index < groups.length ? groupParts(env, groups[index]!, gzip) : null;
          send(controller, index > 1 ? [...text(","), ...parts] : parts);
          return;
        }
        send(controller, text(suffix));
        if (gz) for (const bytes of gz.end()) controller.enqueue(bytes);
        controller.close();
      } catch (error) {
        console.error(
          JSON.stringify({ level: "error", msg: "batch stream failed", error: String(error) }),
        );
        controller.error(error);
      }
    },
  });
}

/**
 * A batch response: `prefix` + groups + `suffix` as JSON. A streamed body for a gzip client is
 * sent as the gzip member `batchBody` assembles (the gzip middleware leaves encoded bodies alone).
 */
export function batchResponse(
  env: Bindings,
  request: Request,
  groups: LeasedGroupRef[],
  json: { prefix: string; suffix: string },
  headers: Record<string, string>,
): Response {
  const gzip = acceptsGzip(request);
  const body = batchBody(env, groups, json.prefix, json.suffix, gzip);
  const all = { "content-type": "application/json", ...headers };
  if (typeof body === "string" || !gzip) return new Response(body, { headers: all });
  // Already gzip: the streamed member, or the same member assembled in memory.
  return new Response(body, {
    headers: { ...all, "content-encoding": "gzip", vary: "Accept-Encoding" },
    encodeBody: "manual",
  });
}

/**
 * Runs a lease on the coordinator and reports where its time went as Server-Timing: `lease` the
 * whole call as the Worker saw it (the Durable Object hop included), `lease-read`, `lease-plan`
 * and `lease-write` the coordinator's stages (coordinator-lease.ts), or `lease` described as "from
 * memory" when the coordinator answered without D1 (a repeated empty lease).
 */
export async function timedLease(
  c: AppContext,
  lease: () => Promise<TimedLeaseOutcome>,
): Promise<TimedLeaseOutcome> {
  const timings = c.get("timings");
  const outcome = await timings.measure("lease", lease);
  const stages = Object.entries(outcome.stages);
  if (stages.length === 0) timings.describe("lease", "from memory");
  for (const [stage, ms] of stages) timings.record(`lease-${stage}`, ms);
  return outcome;
}
