/**
 * `BaseEnvConfig`: the environment-side configuration, with Atropos' field names (snake_case so
 * YAML/CLI files carry over), plus `run`. Only fields something here reads; the CLI accepts
 * Atropos' other fields with a warning (src/cli/atropos-fields.ts, docs/CONFIG.md).
 * Env-specific configs extend it with `BaseEnvConfigSchema.extend({...})`.
 */
import { z } from "zod";

/**
 * An env's own defaults, as Atropos' `config_init()` returns them: env config fields and the
 * inference servers it expects (APIServerConfig fields, as under `openai:`). The lowest layer:
 * config files and flags override them.
 */
export interface EnvConfigInit {
  env?: Record<string, unknown>;
  servers?: Record<string, unknown>[];
}

export const EVAL_HANDLING = ["STOP_TRAIN", "LIMIT_TRAIN", "NONE"] as const;

export const BaseEnvConfigSchema = z
  .object({
    /** Rollouts per group. Sent to /register-env; groups of another size are dropped before send. */
    group_size: z.number().int().positive().default(4),
    /** Max groups in flight at once; -1 → max_num_workers_per_node × number of inference servers. */
    max_num_workers: z.number().int().default(-1),
    /**
     * Samples per evaluation item (k) for envs that evaluate with BaseEnv.evaluateSampled:
     * they report eval/avg@k and eval/pass@j (unbiased) for j = 1, 2, 4, … k.
     */
    eval_samples_per_item: z.number().int().positive().default(1),
    /** Concurrency an env's own evaluate() may use (BaseEnv.mapEval). */
    max_eval_workers: z.number().int().positive().default(16),
    /** Workers per inference server when max_num_workers is -1. */
    max_num_workers_per_node: z.number().int().positive().default(8),
    /** Run evaluate() whenever the trainer step crosses a multiple of this; ≤0 disables. */
    steps_per_eval: z.number().int().default(100),
    /** Token budget of one sequence; sent to /register-env, used by envs as generation limit. */
    max_token_length: z.number().int().positive().default(2048),
    /** What training workers do while evaluate() runs. */
    eval_handling: z.enum(EVAL_HANDLING).default("STOP_TRAIN"),
    /** Fraction of workers kept during eval with LIMIT_TRAIN. */
    eval_limit_ratio: z.number().min(0).max(1).default(0.5),
    /** Sent as `weight` at registration: this env's share of inference and batches. */
    inference_weight: z.number().default(1.0),
    /** Trainer batch size in sequences; -1 means "take it from GET /info". */
    batch_size: z.number().int().default(-1),
    /** Backpressure: at most this many batches' worth of data queued; ≤0 disables the check. */
    max_batches_offpolicy: z.number().int().default(3),
    /** Tokenizer short name ("qwen3", "llama3") or a Hugging Face model name. */
    tokenizer_name: z.string().min(1).default("qwen3"),
    /** Rollout API base URL (atropos-edge or the original Atropos server). */
    rollout_server_url: z.string().url().default("http://localhost:8000"),
    /** Stop when step + queued batches exceed this; -1 → num_steps from /register-env. In
     * `process` mode: the number of groups to produce. */
    total_steps: z.number().int().default(1000),
    /** Desired env name at registration (falls back to the env's envName). */
    wandb_name: z.string().nullable().default(null),
    /** Drop groups whose scores are all identical (no learning signal for GRPO). */
    ensure_scores_are_not_same: z.boolean().default(true),
    /** Synthesize `messages` from decoded tokens when a group has none. */
    include_messages: z.boolean().default(false),
    /**
     * Send each token's decoded text with the group (`token_texts`), so the dashboard shows
     * rollouts as text; trainers never receive it.
     */
    include_token_texts: z.boolean().default(false),
    /** Minimum fraction of every batch reserved for this env (null = none). */
    min_batch_allocation: z.number().min(0).max(1).nullable().default(null),
    /** Seconds before an in-flight group is abandoned (item dropped); -1 disables. */
    worker_timeout: z.number().default(600),
    /** `serve` from Node: append every valid group to this JSONL (suffix _1, _2… if it exists);
     * `process`: its output file. */
    data_path_to_save_groups: z.string().nullable().default(null),
    /** atropos-edge run name; "default" talks to the root paths, others to /runs/{run}. */
    run: z.string().min(1).default("default"),
  })
  .strict();

/** Parsed config (all defaults filled). */
export type BaseEnvConfig = z.output<typeof BaseEnvConfigSchema>;
/** What a user writes: every field optional. */
export type BaseEnvConfigInput = z.input<typeof BaseEnvConfigSchema>;

/** Parse with a readable error listing every bad field. */
export function parseEnvConfig<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input ?? {});
  if (!result.success) {
    const lines = result.error.issues.map(
      (issue) => `  ${issue.path.join(".") || "(root)"}: ${issue.message}`,
    );
    throw new Error(`invalid env config:\n${lines.join("\n")}`);
  }
  return result.data;
}
