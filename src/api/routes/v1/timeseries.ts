import { z } from "zod";
import { timeseriesSchema } from "../../../core/api-schemas";
import { runOf } from "../../context";
import { numberQuery, queryNumber } from "../../request";
import { defineRoute, jsonContent, runParams } from "../define";

export const timeseries = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/timeseries",
    "x-scope": "read",
    summary: "Ingest and delivery per time bucket",
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
    const run = runOf(c);
    const minutes = Math.min(24 * 60, Math.max(1, queryNumber(c, "minutes") ?? 15));
    const bucketS = Math.min(3600, Math.max(1, Math.round(queryNumber(c, "bucket_s") ?? 10)));
    const bucketMs = bucketS * 1000;
    const since = Date.now() - minutes * 60_000;
    const [ingest, delivered] = await c.env.DB.batch([
      c.env.DB.prepare(
        `SELECT CAST(created_at / ?3 AS INTEGER) * ?3 AS t, COUNT(*) AS g, SUM(num_seqs) AS s, AVG(score_mean) AS m
       FROM groups WHERE run = ?1 AND created_at > ?2 GROUP BY 1 ORDER BY 1`,
      ).bind(run, since, bucketMs),
      c.env.DB.prepare(
        `SELECT CAST(created_at / ?3 AS INTEGER) * ?3 AS t, COUNT(*) AS b, SUM(num_seqs) AS s
       FROM batches WHERE run = ?1 AND created_at > ?2 GROUP BY 1 ORDER BY 1`,
      ).bind(run, since, bucketMs),
    ]);
    const points = new Map<
      number,
      {
        t: number;
        ingest_groups: number;
        ingest_sequences: number;
        delivered_batches: number;
        delivered_sequences: number;
        mean_score: number | null;
      }
    >();
    const point = (t: number) => {
      let p = points.get(t);
      if (!p) {
        p = {
          t,
          ingest_groups: 0,
          ingest_sequences: 0,
          delivered_batches: 0,
          delivered_sequences: 0,
          mean_score: null,
        };
        points.set(t, p);
      }
      return p;
    };
    for (const r of (ingest?.results ?? []) as {
      t: number;
      g: number;
      s: number;
      m: number | null;
    }[]) {
      const p = point(r.t);
      p.ingest_groups = r.g;
      p.ingest_sequences = r.s;
      p.mean_score = r.m;
    }
    for (const r of (delivered?.results ?? []) as { t: number; b: number; s: number }[]) {
      const p = point(r.t);
      p.delivered_batches = r.b;
      p.delivered_sequences = r.s;
    }
    return c.json({ bucket_s: bucketS, points: [...points.values()].sort((a, b) => a.t - b.t) });
  },
);
