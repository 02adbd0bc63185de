/**
 * The run's empty epoch (runs.empty_epoch): how ingest knows whether the run's coordinator may be
 * answering empty leases from memory, so that it tells the coordinator about a queued group only
 * then, not after every commit.
 *
 * The coordinator draws a new epoch before it keeps an empty answer, in a write that holds only
 * while the run has no queued group: a commit that queued one either came first (the write does
 * nothing, nothing is kept) or comes after and reads the new epoch in its own transaction. A
 * commit that reads an epoch its isolate has not yet told the coordinator about tells it
 * (`noteQueued`) before answering; once told, the answer kept under that epoch is dropped, and
 * keeping another takes another draw. (src/api/ingest.ts remembers what it told.) Epochs are
 * random, not counted: a run deleted by a reset starts again at 0, and a count would come back
 * to a value an isolate was told of before.
 */
import { z } from "zod";
import { rowsOf } from "./rows";

// Empty answers are kept only when the run has no queued group at all and no replay buffer to
// draw from (run-coordinator.ts).
const RENEW_EMPTY_EPOCH = `
UPDATE runs SET empty_epoch = random() >> 11
WHERE name = ?1 AND NOT replay_enabled
  AND NOT EXISTS (SELECT 1 FROM groups WHERE run = ?1 AND status = 'queued')
RETURNING empty_epoch`;

/** Draws a new epoch for the run unless a group is queued (in a batch of the caller's). */
export function renewEmptyEpochStatement(d1: D1Database, run: string): D1PreparedStatement {
  return d1.prepare(RENEW_EMPTY_EPOCH).bind(run);
}

/** Whether `renewEmptyEpochStatement` drew a new epoch (then an empty answer may be kept). */
export function renewedOf(result: D1Result | undefined): boolean {
  return (result?.results?.length ?? 0) > 0;
}

/** A new epoch for the run unless a group is queued; whether it drew one. */
export async function renewEmptyEpoch(d1: D1Database, run: string): Promise<boolean> {
  return renewedOf(await renewEmptyEpochStatement(d1, run).run());
}

/** Read in ingest's commit, after its inserts (null: the run has no row yet). */
export function emptyEpochStatement(d1: D1Database, run: string): D1PreparedStatement {
  return d1.prepare("SELECT empty_epoch FROM runs WHERE name = ?1").bind(run);
}

const epochRow = z.object({ empty_epoch: z.number() });

export function emptyEpochOf(result: D1Result | undefined): number | null {
  return result ? (rowsOf(result, epochRow)[0]?.empty_epoch ?? null) : null;
}
