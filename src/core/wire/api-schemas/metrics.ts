/**
 * Trainer metrics reported to and read from a run.
 */
import { z } from "zod";

export const metricKindSchema = z
  .enum(["train", "env", "eval"])
  .describe(
    "train: computed by the API for each batch; env: reported by an env (observe()/metrics(), drop counts, curriculum); eval: evaluation results.",
  );
export type MetricKind = z.infer<typeof metricKindSchema>;

const metricNameSchema = z
  .string()
  .min(1)
  .max(200)
  .describe("Metric name, e.g. `train/score_mean`, `drops/too long`, `curriculum/level`.");

export const metricsReportSchema = z.object({
  step: z.number().int().min(0).describe("The run step the values belong to."),
  kind: z
    .enum(["env", "eval"])
    .default("env")
    .describe("env (default): training-time values; eval: evaluation results."),
  policy_version: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Policy version the values were produced with (default: the run's current one)."),
  metrics: z
    .record(metricNameSchema, z.number())
    .refine((m) => Object.keys(m).length <= 1000, "at most 1000 metrics per report"),
});
export type MetricsReport = z.infer<typeof metricsReportSchema>;

export const metricSeriesSchema = z.object({
  name: z.string(),
  env_id: z.number().int().nullable().describe("null: a run-wide value."),
  kind: metricKindSchema,
  steps: z.array(z.number().int()),
  values: z.array(z.number()),
  policy_versions: z.array(z.number().int().nullable()),
});
export type MetricSeries = z.infer<typeof metricSeriesSchema>;

export const metricsResponseSchema = z.object({
  series: z.array(metricSeriesSchema).describe("One per (name, env, kind), steps ascending."),
  truncated: z.boolean().describe("More values matched than `limit`; narrow the filter."),
});
export type MetricsResponse = z.infer<typeof metricsResponseSchema>;

export const metricsReportResponseSchema = z.object({
  status: z.literal("stored"),
  step: z.number().int(),
  stored: z.number().int().describe("Values stored (non-finite ones are skipped)."),
});
