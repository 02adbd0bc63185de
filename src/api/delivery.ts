/**
 * Streams a leased batch to the trainer, one group at a time, so memory stays flat whatever the
 * batch size (a batch of 64 × 8k-token sequences with logprobs is ~15 MB of JSON). Groups are
 * stored in their served (canonical) form, so their bytes are sent as stored; rows stored before
 * that hold the env's JSON, which is parsed and canonicalised here in chunks of about 64 KB.
 */
import { canonicalGroupJson, canonicalGroupPieces } from "../core/canonical-group";
import { type ScoredDataInput, scoredDataSchema } from "../core/schemas";
import type { Bindings } from "./bindings";
import { memoryCost, withMemory } from "./memory-budget";
import type { LeasedGroupRef } from "./storage/payloads";
import { getPayloadBytes } from "./storage/payloads";

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
  return memoryCost(ref.payload.length, ref.payload.encoding === "gzip");
}

/** One group's canonical JSON as a string (single-group endpoints). */
export function canonicalPayload(env: Bindings, ref: LeasedGroupRef): Promise<string> {
  if (ref.payload.encoding === "canonical" && ref.payload.inline !== null) {
    return Promise.resolve(ref.payload.inline);
  }
  return withMemory(env, memoryCostOf(ref), async () =>
    ref.payload.encoding === "canonical"
      ? decoder.decode(await getPayloadBytes(env.PAYLOADS, ref.payload))
      : canonicalGroupJson(await readLegacyGroup(env, ref), ref.envId),
  );
}

/** One group's canonical JSON, `lead` first, as UTF-8 chunks of about CHUNK_CHARS characters. */
export function canonicalPayloadChunks(
  env: Bindings,
  ref: LeasedGroupRef,
  lead = "",
): Promise<Uint8Array[]> {
  if (ref.payload.encoding === "canonical") {
    return withMemory(env, memoryCostOf(ref), async () => {
      const stored = await getPayloadBytes(env.PAYLOADS, ref.payload);
      return lead ? [encoder.encode(lead), stored] : [stored];
    });
  }
  return withMemory(env, memoryCostOf(ref), async () => {
    const chunks: Uint8Array[] = [];
    let pending = lead;
    for (const piece of canonicalGroupPieces(await readLegacyGroup(env, ref), ref.envId)) {
      pending += piece;
      if (pending.length >= CHUNK_CHARS) {
        chunks.push(encoder.encode(pending));
        pending = "";
      }
    }
    if (pending.length > 0) chunks.push(encoder.encode(pending));
    return chunks;
  });
}

/**
 * `prefix` + comma-separated canonical groups + `suffix`: one string when every group is stored
 * inline (small, and already in memory), else streamed.
 */
export function batchBody(
  env: Bindings,
  groups: LeasedGroupRef[],
  prefix: string,
  suffix: string,
): string | ReadableStream<Uint8Array> {
  const inline: string[] = [];
  for (const g of groups) {
    if (g.payload.encoding !== "canonical" || g.payload.inline === null) {
      return streamGroups(env, groups, prefix, suffix);
    }
    inline.push(g.payload.inline);
  }
  return `${prefix}${inline.join(",")}${suffix}`;
}

/** `prefix` + comma-separated canonical groups + `suffix`, streamed. */
export function streamGroups(
  env: Bindings,
  groups: LeasedGroupRef[],
  prefix: string,
  suffix: string,
): ReadableStream<Uint8Array> {
  const open = (index: number) => canonicalPayloadChunks(env, groups[index]!, index ? "," : "");
  let index = -1;
  // Prefetch one group ahead so R2 reads overlap with sending the previous group.
  let nextGroup: Promise<Uint8Array[]> | null = groups.length > 0 ? open(0) : null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (index === -1) {
          controller.enqueue(encoder.encode(prefix));
          index = 0;
          return;
        }
        if (index < groups.length && nextGroup) {
          const chunks = await nextGroup;
          index++;
          nextGroup = index < groups.length ? open(index) : null;
          for (const chunk of chunks) controller.enqueue(chunk);
          return;
        }
        controller.enqueue(encoder.encode(suffix));
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
