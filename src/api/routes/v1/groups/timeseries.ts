import { z } from "zod";
import { timeseriesSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { numberQuery, queryNumber } from "../../../request";
import { batchStatisticsOverTime } from "../../../storage/metrics";
import { defineRoute, jsonContent, runParams } from "../../define";

/** A view of the metrics store: each batch's statistics, bucketed by when the batch was formed. */
export const timeseries = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/timeseries",
    "x-scope": "read",
    summary: "Ingest and delivery per time bucket",
    description:
      "Read from the metrics store: the batches formed in each bucket, their sequences (train/sequences), the groups and sequences stored since the batch before (train/ingest_groups, train/ingest_sequences) and the mean of the envs' train/score_mean. Buckets without a batch are left out.",
    request: {
      params: runParams,
      query: z.object({
        minutes: numberQuery.describe("Window in minutes, 1 to 1440 (default 15)."),
        bucket_s: numberQuery.describe("Bucket width in seconds, 1 to 3600 (default 10)."),
      }),
    },
    responses: {
      200: { description: "Buckets in time order.", content: jsonContent(timeseriesSchema) },
    },
  },
  async (c) => {
    const minutes = Math.min(24 * 60, Math.max(1, queryNumber(c, "minutes") ?? 15));
    const bucketS = Math.min(3600, Math.max(1, Math.round(queryNumber(c, "bucket_s") ?? 10)));
    const since = Date.now() - minutes * 60_000;
    const points = await batchStatisticsOverTime(c.env.DB, runOf(c), since, bucketS * 1000);
    return c.json({ bucket_s: bucketS, points });
  },
);
