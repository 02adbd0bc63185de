/**
 * A run's controls: the replay buffer, the regression guard and the run's event log.
 */
import { z } from "zod";
import { guardActionSchema } from "../../closed-loop/regression-guard";

/** The run's replay buffer settings (GET/PUT /v1/runs/{run}/replay). */
export const replayConfigSchema = z.object({
  enabled: z.boolean(),
  threshold: z
    .number()
    .describe("Delivered groups with a mean score at or above this are kept for replay."),
  capacity: z.number().int().describe("Groups kept at most; the lowest priorities leave first."),
  max_replays: z.number().int().describe("Times one group may be replayed."),
  fraction: z
    .number()
    .describe("Fraction of each batch's sequences taken from the buffer, within one group."),
});
export type ReplayConfig = z.infer<typeof replayConfigSchema>;

export const replayConfigRequestSchema = z
  .object({
    enabled: z.boolean().optional(),
    threshold: z.number().finite().optional(),
    capacity: z.number().int().min(0).max(1_000_000).optional(),
    max_replays: z.number().int().min(1).max(1000).optional(),
    fraction: z
      .number()
      .min(0)
      .max(0.9, "fraction must be at most 0.9: a batch keeps some online data")
      .optional(),
  })
  .strict();
export type ReplayConfigRequest = z.infer<typeof replayConfigRequestSchema>;

export const replayStatusSchema = replayConfigSchema.extend({
  buffered_groups: z.number().int().describe("Groups in the buffer now."),
  replays_left: z.number().int().describe("Replays the buffer can still give."),
  replayed_sequences: z.number().int().describe("Replayed sequences in batches formed so far."),
});
export type ReplayStatus = z.infer<typeof replayStatusSchema>;

/** The run's regression guard (GET/PUT /v1/runs/{run}/guard). */
export const guardConfigSchema = z.object({
  enabled: z.boolean(),
  factor: z.number().describe("An evaluation below factor × baseline is a regression."),
  lower_is_better: z
    .array(z.string())
    .describe(
      "Metrics where smaller is better (losses, error rates; a trailing * names a prefix): above baseline ÷ factor is a regression.",
    ),
  action: guardActionSchema,
  webhook_url: z.string().nullable().describe("POSTed a JSON event on each regression."),
});
export type GuardConfig = z.infer<typeof guardConfigSchema>;

export const guardConfigRequestSchema = z
  .object({
    enabled: z.boolean().optional(),
    factor: z.number().gt(0).max(1, "factor must be at most 1").optional(),
    lower_is_better: z
      .array(z.string().min(1).max(200))
      .max(100)
      .optional()
      .describe("Replaces the list of lower-is-better metrics."),
    action: guardActionSchema.optional(),
    webhook_url: z
      .string()
      .url()
      .refine((u) => /^https?:\/\//.test(u), "webhook_url must be http(s)")
      .nullable()
      .optional(),
  })
  .strict();
export type GuardConfigRequest = z.infer<typeof guardConfigRequestSchema>;

export const baselineSchema = z.object({
  env_id: z.number().int().min(0),
  metric: z.string().min(1).max(200),
  value: z.number().finite(),
});

export const guardStatusSchema = guardConfigSchema.extend({
  baselines: z.array(
    baselineSchema.extend({ source: z.enum(["first", "api"]), set_at: z.number() }),
  ),
});
export type GuardStatus = z.infer<typeof guardStatusSchema>;

export const setBaselinesRequestSchema = z.object({
  baselines: z.array(baselineSchema).min(1).max(1000),
});

export const runEventSchema = z.object({
  id: z.number().int(),
  kind: z.string().describe("regression (more kinds may come)"),
  message: z.string(),
  data: z.record(z.string(), z.unknown()),
  created_at: z.number(),
});
export type RunEvent = z.infer<typeof runEventSchema>;

export const runEventListSchema = z.object({ events: z.array(runEventSchema) });
export type RunEventList = z.infer<typeof runEventListSchema>;
