/**
 * Reads of groups for the browsing routes (GET /v1/runs/{run}/groups[/{id}], /latest_example).
 * Raw SQL: the rows join envs and batches under the API's own column names (a `GroupRow`), and
 * the payload columns are shared with the lease path's raw statements (`GROUP_REF_COLUMNS`).
 */
import { type GroupRow, groupRowSchema } from "../../core/wire/api-schemas";
import {
  GROUP_PAYLOAD_JOIN,
  GROUP_REF_COLUMNS,
  type GroupRefRow,
  groupRefRowSchema,
} from "./payloads";
import { allRows, firstRow } from "./rows";

const GROUP_COLUMNS = `g.id, g.env_id, e.real_name AS env_name, g.status, g.num_seqs, g.total_tokens,
  g.completion_tokens, g.score_mean, g.score_min, g.score_max, g.policy_version, g.created_at,
  g.batch_id, b.step, g.token_id`;
const GROUP_JOINS = `FROM groups g LEFT JOIN envs e ON e.run = g.run AND e.env_id = g.env_id
  LEFT JOIN batches b ON b.id = g.batch_id`;

export const GROUP_STATUSES = ["buffered", "queued", "leased", "delivered", "stale"] as const;

/** The filters of a group listing; each one set narrows it. */
export interface GroupFilter {
  /** Only this token's groups (a contributor's own). */
  tokenId: string | null;
  envId?: number;
  minScore?: number;
  maxScore?: number;
  policyVersion?: number;
  since?: number;
  until?: number;
  /** Ids below this one (the previous page's last). */
  cursor?: number;
  status?: (typeof GROUP_STATUSES)[number];
}

const CLAUSES: [Exclude<keyof GroupFilter, "tokenId" | "status">, string][] = [
  ["envId", "g.env_id = ?"],
  ["minScore", "g.score_mean >= ?"],
  ["maxScore", "g.score_mean <= ?"],
  ["policyVersion", "g.policy_version = ?"],
  ["since", "g.created_at >= ?"],
  ["until", "g.created_at <= ?"],
  ["cursor", "g.id < ?"],
];

/** Up to `limit` of the run's groups matching `filter`, newest first. */
export async function listGroupRows(
  d1: D1Database,
  run: string,
  filter: GroupFilter,
  limit: number,
): Promise<GroupRow[]> {
  const where = ["g.run = ?"];
  const params: (string | number)[] = [run];
  if (filter.tokenId !== null) {
    where.push("g.token_id = ?");
    params.push(filter.tokenId);
  }
  for (const [name, clause] of CLAUSES) {
    const v = filter[name];
    if (v !== undefined) {
      where.push(clause);
      params.push(v);
    }
  }
  if (filter.status) {
    where.push("g.status = ?");
    params.push(filter.status);
  }
  return allRows(
    d1
      .prepare(
        `SELECT ${GROUP_COLUMNS} ${GROUP_JOINS} WHERE ${where.join(" AND ")} ORDER BY g.id DESC LIMIT ${Math.trunc(limit)}`,
      )
      .bind(...params),
    groupRowSchema,
  );
}

const groupDetailRowSchema = groupRowSchema.extend(groupRefRowSchema.shape);

/** One group's row with where its payload is, or null when the run has no such group. */
export async function groupDetailRow(
  d1: D1Database,
  run: string,
  id: number,
): Promise<(GroupRow & GroupRefRow) | null> {
  return firstRow(
    d1
      .prepare(
        `SELECT ${GROUP_COLUMNS}, g.payload_key, g.payload_encoding, g.payload_offset, g.payload_bytes, g.raw_bytes, g.raw_crc32, p.body AS payload_inline ${GROUP_JOINS} ${GROUP_PAYLOAD_JOIN} WHERE g.run = ?1 AND g.id = ?2`,
      )
      .bind(run, id),
    groupDetailRowSchema,
  );
}

/** Whether the run has a group with this id. */
export async function groupExists(d1: D1Database, run: string, id: number): Promise<boolean> {
  const row = await d1
    .prepare("SELECT 1 AS found FROM groups WHERE run = ?1 AND id = ?2")
    .bind(run, id)
    .first();
  return row !== null;
}

/** Where the run's most recently queued (not buffered) group is, or null while it has none. */
export async function latestQueuedGroupRef(
  d1: D1Database,
  run: string,
): Promise<GroupRefRow | null> {
  return firstRow(
    d1
      .prepare(
        `SELECT ${GROUP_REF_COLUMNS} FROM groups g ${GROUP_PAYLOAD_JOIN}
       WHERE g.run = ?1 AND g.status <> 'buffered' ORDER BY COALESCE(g.queued_at, g.created_at) DESC, g.id DESC LIMIT 1`,
      )
      .bind(run),
    groupRefRowSchema,
  );
}
