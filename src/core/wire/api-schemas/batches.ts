/**
 * Delivery: a leased batch (its groups and manifest), the ack, the policy version, and the batch
 * browser's rows.
 */
import { z } from "zod";

/** Per group of a leased batch, in batch order: what staleness and bookkeeping need. */
export const manifestEntrySchema = z.object({
  group_id: z.number().int(),
  env_id: z.number().int().nullable(),
  policy_version: z.number().int().describe("The policy version the group was sampled under."),
  num_seqs: z.number().int(),
  replayed: z
    .boolean()
    .describe(
      "Taken from the run's replay buffer (delivered before); online groups are delivered once.",
    ),
});
export type ManifestEntry = z.infer<typeof manifestEntrySchema>;

/** A delivered group: Atropos' ScoredData keys, env_id stamped by the API. */
export const deliveredGroupSchema = z.record(z.string(), z.unknown()).meta({ id: "Group" });

export const leaseResponseSchema = z.object({
  batch_id: z.string(),
  lease_id: z.string(),
  step: z.number().int(),
  lease_expires_at: z.number(),
  redelivered: z.boolean(),
  groups: z.array(manifestEntrySchema),
  batch: z.array(deliveredGroupSchema),
});

export const ackResponseSchema = z.object({
  batch_id: z.string(),
  status: z.literal("acked"),
  already_acked: z.boolean(),
  step: z.number().int(),
});
export type AckAnswer = z.infer<typeof ackResponseSchema>;

export const policyResponseSchema = z.object({ policy_version: z.number().int() });

export const batchRowSchema = z.object({
  batch_id: z.string(),
  step: z.number().int(),
  status: z.enum(["leased", "acked"]),
  num_groups: z.number().int(),
  num_seqs: z.number().int(),
  created_at: z.number(),
  lease_expires_at: z.number().nullable(),
  acked_at: z.number().nullable(),
  max_staleness: z.number().int().nullable(),
  policy_version_at_formation: z.number().int().nullable(),
  replayed_groups: z
    .number()
    .int()
    .describe("Groups of this batch taken from the replay buffer (delivered before)."),
  groups: z.array(
    z.object({
      id: z.number().int(),
      env_id: z.number().int().nullable(),
      policy_version: z.number().int().nullable(),
      num_seqs: z.number().int().nullable(),
      replayed: z
        .boolean()
        .describe("Taken from the run's replay buffer; false for an online group."),
    }),
  ),
});

export type BatchRow = z.infer<typeof batchRowSchema>;

export const batchPageSchema = z.object({
  batches: z.array(batchRowSchema),
  next_cursor: z.number().int().nullable(),
});
export type BatchPage = z.infer<typeof batchPageSchema>;
