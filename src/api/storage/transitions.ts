/**
 * The batch triggers (drizzle/0019_batch_transitions.sql) lease a new batch's groups and deliver
 * an acked batch's groups: the lease and ack writes rely on them, and a database without them
 * would leave those groups queued (to go out again) or leased for good. Every fresh read that a
 * lease or an ack writes after starts with a guard that aborts its D1 batch, a transaction,
 * unless both exist, so nothing is written without them.
 */
import { sql } from "drizzle-orm";
import { compiledSql } from "./compiled";
import { leasePlanChecks } from "./schema";

/** The message of lease_plan_checks' trigger when its value is false (drizzle/0018). */
export const CHECK_FAILED = "lease plan is stale";

const TRIGGERS = ["batch_leases_groups", "batch_acked_delivers"] as const;

// lease_plan_checks' trigger aborts the batch unless the inserted value is true.
const guard = compiledSql(
  () => sql`INSERT INTO ${leasePlanChecks} (${sql.identifier(leasePlanChecks.current.name)})
    SELECT (SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger'
      AND name IN (${sql.raw(TRIGGERS.map((t) => `'${t}'`).join(", "))})) = ${TRIGGERS.length}`,
);

export const MISSING_MIGRATION =
  "the D1 database lacks migration 0019_batch_transitions, which leases and acks rely on: apply the migrations (npx wrangler d1 migrations apply DB, with --remote for a deployment)";

/** `statements` in one D1 batch after the guard; their results. */
export async function guardedBatch(
  d1: D1Database,
  statements: readonly D1PreparedStatement[],
): Promise<D1Result[]> {
  try {
    return (await d1.batch([guard.bind(d1, {}), ...statements])).slice(1);
  } catch (err) {
    if (err instanceof Error && err.message.includes(CHECK_FAILED)) {
      throw new Error(MISSING_MIGRATION);
    }
    throw err;
  }
}
