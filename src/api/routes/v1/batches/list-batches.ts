import { z } from "zod";
import { batchPageSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { numberQuery, queryNumber } from "../../../request";
import { batchGroupRows, listBatchRows } from "../../../storage/batch-list";
import { defineRoute, jsonContent, runParams } from "../../define";

export const listBatches = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/batches",
    "x-scope": "read",
    summary: "Batches with their manifests, newest step first",
    request: {
      params: runParams,
      query: z.object({
        limit: numberQuery.describe("1 to 200 (default 50)."),
        cursor: numberQuery.describe("`next_cursor` of the previous page (a step)."),
      }),
    },
    responses: {
      200: { description: "A page of batches.", content: jsonContent(batchPageSchema) },
    },
  },
  async (c) => {
    const run = runOf(c);
    const limit = Math.min(200, Math.max(1, Math.round(queryNumber(c, "limit") ?? 50)));
    const cursor = queryNumber(c, "cursor");
    const results = await listBatchRows(
      c.env.DB,
      run,
      cursor ?? Number.MAX_SAFE_INTEGER,
      limit + 1,
    );
    const page = results.slice(0, limit);
    const allIds = page.flatMap((b) => JSON.parse(b.group_ids) as number[]);
    const groupRows = await batchGroupRows(c.env.DB, allIds);
    const byId = new Map(groupRows.map((g) => [g.id, g]));
    return c.json({
      batches: page.map(({ group_ids, replay_ids, ...b }) => {
        const replayed = new Set(replay_ids ? (JSON.parse(replay_ids) as number[]) : []);
        return {
          ...b,
          replayed_groups: replayed.size,
          groups: (JSON.parse(group_ids) as number[]).map((id) => ({
            ...(byId.get(id) ?? { id, env_id: null, policy_version: null, num_seqs: null }),
            replayed: replayed.has(id),
          })),
        };
      }),
      next_cursor: results.length > limit ? page[page.length - 1]!.step : null,
    });
  },
);
