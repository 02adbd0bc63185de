/**
 * The group browser: a page of group rows and one group's detail.
 */
import { z } from "zod";
import { deliveredGroupSchema } from "./batches";

/** A row of the group browser (GET /v1/runs/{run}/groups). */
export const groupRowSchema = z.object({
  id: z.number().int(),
  env_id: z.number().int().nullable(),
  env_name: z.string().nullable(),
  status: z.enum(["buffered", "queued", "leased", "delivered", "stale"]),
  num_seqs: z.number().int(),
  total_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  score_mean: z.number(),
  score_min: z.number(),
  score_max: z.number(),
  policy_version: z.number().int(),
  created_at: z.number(),
  batch_id: z.string().nullable(),
  step: z.number().int().nullable(),
  token_id: z
    .string()
    .nullable()
    .describe("The API token that submitted the group (null: API_TOKEN or open local dev)."),
});
export type GroupRow = z.infer<typeof groupRowSchema>;

export const groupPageSchema = z.object({
  groups: z.array(groupRowSchema),
  next_cursor: z.number().int().nullable(),
});
export type GroupPage = z.infer<typeof groupPageSchema>;

export const groupDetailSchema = z.object({
  group: groupRowSchema,
  payload: deliveredGroupSchema,
  token_texts: z
    .array(z.array(z.string()))
    .nullable()
    .describe("Each token's text per sequence, when the env sent it (include_token_texts)."),
});
export type GroupDetail = z.infer<typeof groupDetailSchema>;
