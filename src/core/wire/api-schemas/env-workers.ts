/**
 * Envs and env workers: the Atropos env answers (/status-env, /register-env), an env worker's
 * checkpoint and description, and the run's controls of one env (PATCH .../envs/{id}).
 */
import { z } from "zod";

export const checkpointSchema = z.object({
  step: z.number().int(),
  state: z.record(z.string(), z.unknown()),
  saved_at: z.number(),
});

/** An env worker as its feeder describes it. */
export const envWorkerSchema = z
  .object({
    run: z.string(),
    name: z.string(),
    env: z.string(),
    env_id: z.number().int().nullable(),
    status: z.string(),
  })
  .catchall(z.unknown());
/** An env worker as GET/POST /v1/runs/{run}/env-workers… answer (its feeder's summary). */
export type EnvWorker = z.infer<typeof envWorkerSchema>;

export const statusEnvSchema = z.object({
  current_step: z.number().int(),
  queue_size: z.number().int(),
  unallocated_fraction: z.number(),
  self_queue_size: z.number().int(),
  max_group_size: z.number().int(),
  env_weight: z.number(),
  policy_version: z
    .number()
    .int()
    .describe(
      "The run's policy version now: an env stamps it on the groups it starts sampling (not in Atropos).",
    ),
});
/** The answer of GET /status-env. */
export type StatusEnv = z.infer<typeof statusEnvSchema>;
/**
 * The answer of GET /status-env as an env reads it: `policy_version` is atropos-edge's own (the
 * original server does not send it).
 */
export const envStatusAnswerSchema = statusEnvSchema.partial({ policy_version: true });

export const registerEnvResponseSchema = z.object({
  status: z.string(),
  env_id: z.number().int().optional(),
  wandb_name: z.string().optional(),
  checkpoint_dir: z.string().optional(),
  starting_step: z.number().int().optional(),
  checkpoint_interval: z.number().int().optional(),
  num_steps: z.number().int().optional(),
  resumed: z.boolean().optional(),
});
/** The answer of POST /register-env (`status` other than "success": the trainer has not started). */
export type RegisterEnvAnswer = z.infer<typeof registerEnvResponseSchema>;

/** PATCH /v1/runs/{run}/envs/{id}: the run's mix, changed while it goes. */
export const envControlRequestSchema = z
  .object({
    weight: z
      .number()
      .positive("weight must be above 0 (pause the env to stop it)")
      .max(1e6)
      .optional()
      .describe("The env's weight in /status-env's env_weight."),
    min_batch_allocation: z
      .number()
      .min(0)
      .max(1)
      .nullable()
      .optional()
      .describe("Fraction of every batch reserved for this env; null removes the reservation."),
    paused: z
      .boolean()
      .optional()
      .describe(
        "Paused: /status-env reports a zero quota (env_weight 0, unallocated_fraction -1, self_queue_size 2^31-1), env workers issue nothing, and its allocation is not reserved. Its queued groups are still delivered.",
      ),
  })
  .strict()
  .refine(
    (b) => b.weight !== undefined || b.min_batch_allocation !== undefined || b.paused !== undefined,
    { message: "send at least one of weight, min_batch_allocation, paused" },
  );
export type EnvControlRequest = z.infer<typeof envControlRequestSchema>;

export const envControlSchema = z.object({
  env_id: z.number().int(),
  name: z.string(),
  weight: z.number(),
  min_batch_allocation: z.number().nullable(),
  paused: z.boolean(),
});
export type EnvControl = z.infer<typeof envControlSchema>;
