import { z } from "zod";

/** One inference server (Atropos `APIServerConfig` plus atropos-edge fields). */
export const APIServerConfigSchema = z.object({
  base_url: z.string().default(""),
  api_key: z.string().nullable().default(""),
  model_name: z.string().default("default"),
  server_type: z.enum(["openai", "vllm", "sglang", "trl"]).default("openai"),
  /** "none" → use model_name. */
  tokenizer_name: z.string().default("none"),
  /** Seconds per HTTP request. */
  timeout: z.number().positive().default(1200),
  num_max_requests_at_once: z.number().int().positive().default(512),
  num_requests_for_eval: z.number().int().positive().default(64),
  health_check: z.boolean().default(true),
  n_kwarg_is_ignored: z.boolean().default(false),
  /** Requests with a larger n are split into chunks of at most this many completions. */
  max_n_completions: z.number().int().positive().default(8),
  /** vllm only: Atropos' custom `/generate` server, or vLLM's stock OpenAI server (`/v1/completions`). */
  vllm_mode: z.enum(["generate", "openai"]).default("generate"),
  /** Accepted for compatibility; unused (as in Atropos). */
  rolling_buffer_length: z.number().int().optional(),
});

export type APIServerConfig = z.output<typeof APIServerConfigSchema>;

/** The env an env worker runs: a registered env's name, its config and its inference servers. */
export interface EnvWorkerSpec {
  envName: string;
  config: Record<string, unknown>;
  inference: APIServerConfig[];
}
export type APIServerConfigInput = z.input<typeof APIServerConfigSchema>;

export function parseServerConfig(input: APIServerConfigInput): APIServerConfig {
  return APIServerConfigSchema.parse(input);
}

export function tokenizerNameOf(config: APIServerConfig): string {
  return config.tokenizer_name === "none" ? config.model_name : config.tokenizer_name;
}
