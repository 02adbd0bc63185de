/** Token texts stored beside their groups in D1 (table group_token_texts), for display only. */
import { and, eq, sql } from "drizzle-orm";
import { storedCopy } from "./groups";
import { db } from "./runs";
import { groupTokenTexts } from "./schema";

/**
 * Texts larger than this are not kept (a D1 value holds at most 2 MB); the rollout view then
 * shows token ids, as for a group sent without texts.
 */
export const TOKEN_TEXTS_MAX_BYTES = 1_000_000;

/**
 * The insert for the token texts of the group a submission stored (found by its dedupe key), in
 * the group's own commit (see submissionTrajectoryInserts), or null when they are too large.
 */
export function submissionTokenTextsInsert(
  d1: D1Database,
  run: string,
  submission: { dedupeKey: string; dedupeCutoff: number },
  texts: string[][],
  now: number,
): D1PreparedStatement | null {
  const body = JSON.stringify(texts);
  if (body.length > TOKEN_TEXTS_MAX_BYTES) return null;
  return d1
    .prepare(
      `INSERT OR REPLACE INTO group_token_texts (run, group_id, body, created_at)
SELECT ?1, id, ?3, ?4 FROM groups WHERE ${storedCopy(2, 5)}
ORDER BY id LIMIT 1`,
    )
    .bind(run, submission.dedupeKey, body, now, submission.dedupeCutoff);
}

export async function groupTokenTextsOf(
  d1: D1Database,
  run: string,
  groupId: number,
): Promise<string[][] | null> {
  const rows = await db(d1)
    .select({ body: groupTokenTexts.body })
    .from(groupTokenTexts)
    .where(and(eq(groupTokenTexts.run, run), eq(groupTokenTexts.groupId, groupId)))
    .limit(1);
  return rows[0] ? (JSON.parse(rows[0].body) as string[][]) : null;
}

/** Drops the token texts of groups that are gone (retention). */
export function deleteGroupTokenTexts(d1: D1Database, run: string, groupIds: readonly number[]) {
  return db(d1)
    .delete(groupTokenTexts)
    .where(
      and(
        eq(groupTokenTexts.run, run),
        // One bound JSON list: D1 caps a statement's bound parameters at 100.
        sql`${groupTokenTexts.groupId} IN (SELECT value FROM json_each(${JSON.stringify(groupIds)}))`,
      ),
    );
}
