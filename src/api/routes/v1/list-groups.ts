import { z } from "zod";
import { type GroupPage, type GroupRow, groupPageSchema } from "../../../core/api-schemas";
import { runOf } from "../../context";
import { ApiError } from "../../errors";
import { ownGroupsOnly } from "../../middleware/auth";
import { numberQuery, queryNumber } from "../../request";
import { defineRoute, jsonContent, runParams } from "../define";

export const GROUP_COLUMNS = `g.id, g.env_id, e.real_name AS env_name, g.status, g.num_seqs, g.total_tokens,
  g.completion_tokens, g.score_mean, g.score_min, g.score_max, g.policy_version, g.created_at,
  g.batch_id, b.step, g.token_id`;
export const GROUP_JOINS = `FROM groups g LEFT JOIN envs e ON e.run = g.run AND e.env_id = g.env_id
  LEFT JOIN batches b ON b.id = g.batch_id`;

export const listGroups = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/groups",
    "x-scope": "read",
    "x-contributor-own": true,
    summary: "Browse groups, newest first",
    request: {
      params: runParams,
      query: z.object({
        env_id: numberQuery,
        min_score: numberQuery,
        max_score: numberQuery,
        policy_version: numberQuery,
        since: numberQuery.describe("Created at or after (ms since the epoch)."),
        until: numberQuery.describe("Created at or before (ms since the epoch)."),
        status: z.enum(["buffered", "queued", "leased", "delivered", "stale"]).optional(),
        limit: numberQuery.describe("1 to 200 (default 50)."),
        cursor: numberQuery.describe("`next_cursor` of the previous page."),
      }),
    },
    responses: { 200: { description: "A page of groups.", content: jsonContent(groupPageSchema) } },
  },
  async (c) => {
    const run = runOf(c);
    const where = ["g.run = ?"];
    const params: (string | number)[] = [run];
    const own = ownGroupsOnly(c);
    if (own !== null) {
      where.push("g.token_id = ?");
      params.push(own);
    }
    const filters: [string, string][] = [
      ["env_id", "g.env_id = ?"],
      ["min_score", "g.score_mean >= ?"],
      ["max_score", "g.score_mean <= ?"],
      ["policy_version", "g.policy_version = ?"],
      ["since", "g.created_at >= ?"],
      ["until", "g.created_at <= ?"],
      ["cursor", "g.id < ?"],
    ];
    for (const [name, clause] of filters) {
      const v = queryNumber(c, name);
      if (v !== undefined) {
        where.push(clause);
        params.push(v);
      }
    }
    const status = c.req.query("status");
    if (status) {
      if (!["buffered", "queued", "leased", "delivered", "stale"].includes(status)) {
        throw new ApiError(
          "BAD_REQUEST",
          "status must be one of buffered, queued, leased, delivered, stale",
        );
      }
      where.push("g.status = ?");
      params.push(status);
    }
    const limit = Math.min(200, Math.max(1, Math.round(queryNumber(c, "limit") ?? 50)));
    const { results } = await c.env.DB.prepare(
      `SELECT ${GROUP_COLUMNS} ${GROUP_JOINS} WHERE ${where.join(" AND ")} ORDER BY g.id DESC LIMIT ${limit + 1}`,
    )
      .bind(...params)
      .all<GroupRow>();
    const page = results.slice(0, limit);
    return c.json({
      groups: page,
      next_cursor: results.length > limit ? page[page.length - 1]!.id : null,
    } satisfies GroupPage);
  },
);
