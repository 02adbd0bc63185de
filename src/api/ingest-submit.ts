/**
 * Submission from inside the Worker: a group validated and committed as POST /scored_data
 * would, without an HTTP hop (src/worker/queue-handler.ts, the inference proxy's finish).
 */
import type { ScoredDataInput } from "../core/wire/schemas";
import type { Trajectory } from "../core/wire/trajectory";
import type { Bindings } from "./bindings";
import { trajectoriesOfSubmission, validateGroup } from "./group-validation";
import { ingestGroups } from "./ingest";
import { ingestItemOf, submissionDedupeKey } from "./ingest-item";

/**
 * A group that passed ingest's validation (`validateGroup`: schema and group rules; and the
 * trajectories sent beside it), with the JSON it was parsed from (trajectories ride beside the 14
 * keys). Only `CheckedGroup.of` makes one, so `submitGroupInProcess` takes it without validating
 * again: the queue consumer checks every group of an item before it submits any. HTTP ingest
 * always validates what it receives.
 */
export class CheckedGroup {
  private constructor(
    readonly group: ScoredDataInput,
    readonly json: unknown,
    readonly trajectories: Trajectory[] | null,
  ) {}

  /** Throws ApiError (VALIDATION_FAILED) naming what is wrong, trajectories beside it included. */
  static of(json: unknown): CheckedGroup {
    const group = validateGroup(json);
    return new CheckedGroup(group, json, trajectoriesOfSubmission(json, group.tokens.length));
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
  group: CheckedGroup | unknown,
  idempotencyKey: string,
  tokenId: string | null = null,
): Promise<{ status: "received" | "buffered" | "duplicate"; groupId?: number }> {
  const checked = group instanceof CheckedGroup ? group : CheckedGroup.of(group);
  const item = ingestItemOf(checked.group, checked.json, {
    dedupeKey: submissionDedupeKey("", idempotencyKey, 0, null),
    tokenId,
    trajectories: checked.trajectories,
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
