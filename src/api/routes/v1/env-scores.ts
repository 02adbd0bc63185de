import { z } from "zod";
import { scoreHistogramSchema } from "../../../core/api-schemas";
import { runOf } from "../../context";
import { intParam, intPathParam, numberQuery, queryNumber } from "../../request";
import { defineRoute, jsonContent, runParams } from "../define";

export const envScores = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/envs/{envId}/scores",
    "x-scope": "read",
    summary: "Score histogram of an env's latest 500 groups",
    request: {
      params: runParams.extend({ envId: intPathParam }),
      query: z.object({ bins: numberQuery.describe("1 to 100 (default 20).") }),
    },
    responses: {
      200: { description: "The histogram.", content: jsonContent(scoreHistogramSchema) },
    },
  },
  async (c) => {
    const run = runOf(c);
    const envId = intParam(c, "envId");
    const bins = Math.min(100, Math.max(1, Math.round(queryNumber(c, "bins") ?? 20)));
    const { results } = await c.env.DB.prepare(
      "SELECT scores_json FROM groups WHERE run = ?1 AND env_id = ?2 ORDER BY id DESC LIMIT 500",
    )
      .bind(run, envId)
      .all<{ scores_json: string }>();
    const scores = results.flatMap((r) => JSON.parse(r.scores_json) as number[]);
    if (scores.length === 0) return c.json({ bins: [], samples: 0 });
    const lo = Math.min(...scores);
    const hi = Math.max(...scores);
    const width = hi > lo ? (hi - lo) / bins : 1;
    const histogram = Array.from({ length: hi > lo ? bins : 1 }, (_, i) => ({
      lo: lo + i * width,
      hi: hi > lo ? lo + (i + 1) * width : hi,
      count: 0,
    }));
    for (const s of scores) {
      const i = hi > lo ? Math.min(bins - 1, Math.floor((s - lo) / width)) : 0;
      histogram[i]!.count++;
    }
    return c.json({ bins: histogram, samples: scores.length });
  },
);
