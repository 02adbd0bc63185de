/**
 * The batch triggers (drizzle/0019_batch_transitions.sql) lease a new batch's groups and deliver
 * an acked batch's groups: the lease and ack writes rely on them, and a database without them
 * would leave those groups queued (to go out again) or leased for good. A lease also writes its
 * step's statistics into `batch_statistics` (drizzle/0020), and the lease API defers its groups
 * to a second write, which the lease trigger must then leave alone (drizzle/0022: its `WHEN
 * groups_deferred = 0`; without it both would mark them). Every fresh read that a lease or an
 * ack writes after starts with a guard that aborts its D1 batch, a transaction, unless all of
 * these exist, so nothing is written without them (the request answers 500 and logs which
 * migrations to apply).
 */
import { sql } from "drizzle-orm";
import { compiledSql } from "./compiled";
import { leasePlanChecks } from "./schema";

/** The message of lease_plan_checks' trigger when its value is false (drizzle/0018). */
export const CHECK_FAILED = "lease plan is stale";

/** The schema objects leases and acks rely on, by type and name. */
const REQUIRED = [
  ["trigger", "batch_leases_groups"],
  ["trigger", "batch_acked_delivers"],
  ["table", "batch_statistics"],
] as const;

// lease_plan_checks' trigger aborts the batch unless the inserted value is true.
const guard = compiledSql(
  () => sql`INSERT INTO ${leasePlanChecks} (${sql.identifier(leasePlanChecks.current.name)})
    SELECT (SELECT COUNT(*) FROM sqlite_master WHERE (type, name) IN (VALUES ${sql.raw(
      REQUIRED.map(([type, name]) => `('${type}', '${name}')`).join(", "),
    )})) = ${REQUIRED.length}
    AND EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'batch_leases_groups'
      AND sql LIKE '%groups_deferred%')`,
);

export const MISSING_MIGRATION =
  "the D1 database lacks migration 0019_batch_transitions, 0020_batch_statistics or 0022_deferred_lease_groups, which leases and acks rely on: apply the migrations (npx wrangler d1 migrations apply DB, with --remote for a deployment)";

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
