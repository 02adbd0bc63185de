import { scoreHistogramSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { intParam, intPathParam } from "../../../request";
import { latestScoreHistogram } from "../../../storage/metrics";
import { defineRoute, jsonContent, runParams } from "../../define";

/** A view of the metrics store: the `train/score_hist/*` buckets of the env's latest batch. */
export const envScores = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/envs/{envId}/scores",
    "x-scope": "read",
    summary: "Score histogram of an env's sequences in its latest batch",
    description:
      "Read from the metrics store (GET /v1/runs/{run}/metrics?name=train/score_hist/*&env={envId} has every step's buckets): 20 equal buckets between that step's train/score_min and train/score_max.",
    request: { params: runParams.extend({ envId: intPathParam }) },
    responses: {
      200: { description: "The histogram.", content: jsonContent(scoreHistogramSchema) },
    },
  },
  async (c) => c.json(await latestScoreHistogram(c.env.DB, runOf(c), intParam(c, "envId"))),
);
