/**
 * Streams a leased batch to the trainer: each group's payload is read from R2, canonicalised
 * to Atropos' 14-key form and written out one at a time, so memory stays flat whatever the
 * batch size (a batch of 64 × 8k-token sequences with logprobs is ~16 MB of JSON).
 */
import { canonicalGroupJson } from "../core/canonical-group";
import { scoredDataSchema } from "../core/schemas";
import type { Bindings } from "./bindings";
import { memoryCost, withMemory } from "./memory-budget";
import type { LeasedGroupRef } from "./storage/payloads";
import { getPayloadBytes } from "./storage/payloads";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function canonicalPayload(env: Bindings, ref: LeasedGroupRef): Promise<string> {
  const cost = memoryCost(ref.payload.length, ref.payload.encoding === "gzip");
  return withMemory(env, cost, async () => {
    const bytes = await getPayloadBytes(env.PAYLOADS, ref.payload);
    const parsed = scoredDataSchema.parse(JSON.parse(decoder.decode(bytes)));
    return canonicalGroupJson(parsed, ref.envId);
  });
}

/** `prefix` + comma-separated canonical groups + `suffix`, streamed. */
export function streamGroups(
  env: Bindings,
  groups: LeasedGroupRef[],
  prefix: string,
  suffix: string,
): ReadableStream<Uint8Array> {
  let index = -1;
  // Prefetch one group ahead so R2 reads overlap with serialisation of the previous group.
  let nextPayload: Promise<string> | null = groups[0] ? canonicalPayload(env, groups[0]) : null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (index === -1) {
          controller.enqueue(encoder.encode(prefix));
          index = 0;
          return;
        }
        if (index < groups.length && nextPayload) {
          const json = await nextPayload;
          index++;
          nextPayload = index < groups.length ? canonicalPayload(env, groups[index]!) : null;
          controller.enqueue(encoder.encode(index > 1 ? `,${json}` : json));
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
