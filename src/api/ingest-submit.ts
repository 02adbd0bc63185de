/**
 * Submission from inside the Worker: a group validated and committed as POST /scored_data
 * would, without an HTTP hop (src/worker/queue-handler.ts, the inference proxy's finish).
 */
import type { Bindings } from "./bindings";
import { validateGroup } from "./group-validation";
import { ingestGroups } from "./ingest";
import { ingestItemOf, submissionDedupeKey } from "./ingest-item";

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
