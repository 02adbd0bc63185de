/**
 * Request schemas of the rollout API. They validate requests (with pydantic-style lax coercion
 * where Atropos' Python clients rely on it) and generate the OpenAPI document.
 */
import { z } from "zod";
import type { ChatMessage } from "./chat-schemas";
import {
  checkNumberCube,
  checkNumberList,
  checkNumberMatrix,
  type NumericKind,
} from "./numeric-matrix";
import { trajectorySchema } from "./trajectory";

/** pydantic v2 lax int: ints, integral floats and numeric strings. */
export const laxInt = z.preprocess((v) => {
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return v;
}, z.number().int());

/** pydantic v2 lax float: numbers, numeric strings and booleans. */
export const laxFloat = z.preprocess((v) => {
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  if (typeof v === "boolean") return v ? 1 : 0;
  return v;
}, z.number());

function numericArray(
  depth: 1 | 2 | 3,
  kind: NumericKind,
  description: string,
): z.ZodType<number[] | number[][] | number[][][]> {
  const check = depth === 1 ? checkNumberList : depth === 2 ? checkNumberMatrix : checkNumberCube;
  const schema = z.custom<number[] | number[][] | number[][][]>().superRefine((value, ctx) => {
    if (value === undefined) {
      ctx.addIssue({
        code: "custom",
        message: "Field required",
        params: { pydanticType: "missing" },
      });
      return;
    }
    const issue = check(value, kind);
    if (issue) {
      ctx.addIssue({
        code: "custom",
        message: issue.msg,
        path: issue.path,
        input: issue.input,
        params: { pydanticType: issue.type },
      });
    }
  });
  // The fast check is a custom type, so its JSON Schema (for the OpenAPI document) is metadata.
  let json: Record<string, unknown> = { type: kind === "int" ? "integer" : "number" };
  for (let i = 0; i < depth; i++) json = { type: "array", items: json };
  return schema.meta({ ...json, description });
}

const intMatrix = (d: string) => numericArray(2, "int", d) as z.ZodType<number[][]>;
const floatMatrix = (d: string) => numericArray(2, "float", d) as z.ZodType<number[][]>;

// Atropos (pydantic's Message) checks only that `role` and `content` are there, so the wire
// stays that lax; the type is the chat message envs write (chat-schemas.ts), which the server
// never relies on beyond those two keys.
const messageSchema = z
  .record(z.string(), z.unknown())
  .refine((m) => "role" in m && "content" in m, {
    message: "Value error, Message must have 'role' and 'content' fields",
    params: { pydanticType: "value_error" },
  }) as unknown as z.ZodType<ChatMessage>;

export const scoredDataSchema = z
  .object({
    tokens: intMatrix("Token ids per sequence (prompt + completion)."),
    masks: intMatrix("Per-token training labels: -100 = not trained, else the token id."),
    scores: numericArray(1, "float", "One score per sequence.") as z.ZodType<number[]>,
    advantages: floatMatrix("Per-token advantages.").nullish(),
    ref_logprobs: floatMatrix("Reference-model logprobs per token.").nullish(),
    messages: z
      .array(z.array(messageSchema))
      .nullish()
      .describe("Chat messages per sequence; each needs `role` and `content`."),
    generation_params: z.record(z.string(), z.unknown()).nullish(),
    inference_logprobs: floatMatrix(
      "Sampling logprobs aligned with tokens; 1.0 on masked positions by convention.",
    ).nullish(),
    overrides: z.array(z.record(z.string(), z.unknown())).nullish(),
    group_overrides: z.record(z.string(), z.unknown()).nullish(),
    images: z.unknown().optional(),
    env_id: laxInt.nullish(),
    distill_token_ids: (
      numericArray(3, "int", "[sequence][position][k] teacher top-k ids.") as z.ZodType<
        number[][][]
      >
    ).nullish(),
    distill_logprobs: (
      numericArray(3, "float", "[sequence][position][k] teacher top-k logprobs.") as z.ZodType<
        number[][][]
      >
    ).nullish(),
    policy_version: laxInt
      .pipe(z.number().int().min(0))
      .nullish()
      .describe(
        "atropos-edge: policy version the rollouts were sampled under (default: the run's current version).",
      ),
    token_texts: z
      .array(z.array(z.string()))
      .nullish()
      .describe(
        "atropos-edge: per sequence, the text of each token (aligned with tokens), for the dashboard's decoded view; stored with the group, never delivered to trainers.",
      ),
  })
  .describe("A scored group (Atropos ScoredData). Unknown keys are ignored.");

export type ScoredDataInput = z.infer<typeof scoredDataSchema>;

export const scoredDataListSchema = z.array(scoredDataSchema);

/**
 * A group as an env submits it: the wire group and the trajectories an agent env sends beside its
 * 14 keys (checked apart, api/group-validation.ts, and stored beside the group). The type of the
 * groups envs build (`ScoredDataGroup`, core/group-types.ts).
 */
export const submittedGroupSchema = scoredDataSchema.extend({
  trajectories: z.array(trajectorySchema).nullish(),
});

/**
 * Bounds of the sizes a trainer and an env register: far above any real run (Atropos' defaults are
 * batch 1024, 2048 tokens, groups of 4-16), low enough that arithmetic on them stays exact and no
 * batch or group is unreachable by construction. -1 is Atropos' own "not set" for token lengths.
 */
export const MAX_BATCH_SIZE = 2 ** 20;
export const MAX_GROUP_SIZE = 2 ** 16;
export const MAX_TOKEN_LENGTH = 2 ** 24;

function tokenLength(name: string) {
  return laxInt.pipe(
    z
      .number()
      .int()
      .refine((n) => n === -1 || (n >= 1 && n <= MAX_TOKEN_LENGTH), {
        message: `${name} must be -1 (not set) or between 1 and ${MAX_TOKEN_LENGTH}`,
      }),
  );
}

export const registrationSchema = z.object({
  wandb_group: z.string(),
  wandb_project: z.string(),
  batch_size: laxInt.pipe(
    z
      .number()
      .int()
      .min(1, "batch_size must be at least 1")
      .max(MAX_BATCH_SIZE, `batch_size must be at most ${MAX_BATCH_SIZE}`),
  ),
  max_token_len: tokenLength("max_token_len"),
  checkpoint_dir: z.string(),
  save_checkpoint_interval: laxInt,
  starting_step: laxInt.pipe(z.number().int().min(0, "starting_step must be >= 0")),
  num_steps: laxInt,
});
export type Registration = z.infer<typeof registrationSchema>;

export const registerEnvSchema = z.object({
  max_token_length: tokenLength("max_token_length"),
  desired_name: z
    .string()
    .min(1, "desired_name must not be empty")
    .max(200, "desired_name must be at most 200 characters"),
  weight: laxFloat.pipe(
    z
      .number()
      .min(0, "weight must be between 0 and 1e6")
      .max(1e6, "weight must be between 0 and 1e6"),
  ),
  group_size: laxInt.pipe(
    z
      .number()
      .int()
      .min(1, "group_size must be at least 1")
      .max(MAX_GROUP_SIZE, `group_size must be at most ${MAX_GROUP_SIZE}`),
  ),
  min_batch_allocation: laxFloat
    .pipe(z.number().min(0).max(1, "min_batch_allocation is a fraction between 0 and 1"))
    .nullish(),
  env_key: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe(
      "atropos-edge: stable identity; re-registering with the same key resumes the same env_id.",
    ),
});
export type RegisterEnv = z.infer<typeof registerEnvSchema>;

export const envIdSchema = z.object({
  env_id: laxInt.pipe(z.number().int().min(0, "env_id must be >= 0")),
});

export const leaseRequestSchema = z
  .object({
    lease_seconds: laxFloat
      .pipe(z.number().min(1).max(86_400, "lease_seconds must be between 1 and 86400"))
      .optional(),
    max_staleness: laxInt
      .pipe(z.number().int().min(0, "max_staleness must be >= 0"))
      .nullish()
      .describe("Exclude groups sampled more than this many policy versions ago."),
  })
  .describe("Optional lease parameters.");

export const ackRequestSchema = z
  .object({ lease_id: z.string().optional() })
  .describe("Optional: the lease_id returned by the lease, to detect acking a redelivered batch.");

export const policyRequestSchema = z.object({
  version: laxInt.pipe(z.number().int().min(0, "version must be >= 0")),
  reset: z
    .boolean()
    .optional()
    .describe(
      "Allow a version lower than the current one (training restarted); without it a lower version is refused with 409.",
    ),
});

export const evalReportSchema = z.object({
  step: laxInt.pipe(z.number().int().min(0)),
  metrics: z.record(z.string(), z.number()),
});

export const runNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "run names are 1-64 characters of A-Z a-z 0-9 _ . -");
