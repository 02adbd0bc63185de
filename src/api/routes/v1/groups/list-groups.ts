import { z } from "zod";
import { type GroupPage, type GroupRow, groupPageSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { ownGroupsOnly } from "../../../middleware/auth";
import { numberQuery, queryNumber } from "../../../request";
import { GROUP_STATUSES, type GroupFilter, listGroupRows } from "../../../storage/group-reads";
import { defineRoute, jsonContent, runParams } from "../../define";

function isGroupStatus(status: string): status is (typeof GROUP_STATUSES)[number] {
  return (GROUP_STATUSES as readonly string[]).includes(status);
}

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
    const filter: GroupFilter = {
      tokenId: ownGroupsOnly(c),
      envId: queryNumber(c, "env_id"),
      minScore: queryNumber(c, "min_score"),
      maxScore: queryNumber(c, "max_score"),
      policyVersion: queryNumber(c, "policy_version"),
      since: queryNumber(c, "since"),
      until: queryNumber(c, "until"),
      cursor: queryNumber(c, "cursor"),
    };
    const status = c.req.query("status");
    if (status) {
      if (!isGroupStatus(status)) {
        throw new ApiError(
          "BAD_REQUEST",
          "status must be one of buffered, queued, leased, delivered, stale",
        );
      }
      filter.status = status;
    }
    const limit = Math.min(200, Math.max(1, Math.round(queryNumber(c, "limit") ?? 50)));
    const results: GroupRow[] = await listGroupRows(c.env.DB, run, filter, limit + 1);
    const page = results.slice(0, limit);
    return c.json({
      groups: page,
      next_cursor: results.length > limit ? page[page.length - 1]!.id : null,
    } satisfies GroupPage);
  },
);
