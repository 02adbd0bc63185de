import { z } from "zod";

/**
 * The inference servers atropos-edge talks to, one value per server (docs/INFERENCE.md has the
 * command that starts each one and what is sent and parsed). The CLI's `--server-type`, the
 * `openai:` config section, the env-worker start route and the Worker all take these values.
 */
export const SERVER_TYPES = [
  "vllm",
  "vllm-generate",
  "atropos",
  "sglang",
  "trl",
  "openai",
] as const;
export type ServerType = (typeof SERVER_TYPES)[number];

/** One line per server type, for `--help` and error messages. */
export const SERVER_TYPE_HELP: Record<ServerType, string> = {
  vllm: "stock `vllm serve` (OpenAI API: /v1/completions with token-id prompts, return_token_ids)",
  "vllm-generate": "stock `vllm serve`, its token-in/token-out /inference/v1/generate endpoint",
  atropos: "Atropos' example_trainer/vllm_api_server.py (/generate)",
  sglang: "SGLang `python -m sglang.launch_server` (/generate with input_ids)",
  trl: "TRL `trl vllm-serve` (/generate/ with token-id prompts, trl>=1.0)",
  openai: "any OpenAI-compatible API: text only, not token-exact",
};

/** One inference server (Atropos `APIServerConfig` plus atropos-edge fields). */
export const APIServerConfigSchema = z.object({
  base_url: z.string().default(""),
  api_key: z.string().nullable().default(""),
  model_name: z.string().default("default"),
  server_type: z.enum(SERVER_TYPES).default("openai"),
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
  /**
   * Deprecated (use server_type): with server_type "vllm", "generate" meant Atropos' `/generate`
   * server (now "atropos") and "openai" stock vLLM (now "vllm"). Still accepted.
   */
  vllm_mode: z.enum(["generate", "openai"]).optional(),
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

/**
 * An env worker's spec as it is stored and travels on the queue: its servers listed without keys,
 * or "run": the run's stored servers (PUT /v1/runs/{run}/inference, keys sealed at rest), looked
 * up where they are used, so no API key is ever written into a queue message or feeder state.
 */
export interface EnvWorkerRef extends Omit<EnvWorkerSpec, "inference"> {
  inference: APIServerConfig[] | "run";
}
export type APIServerConfigInput = z.input<typeof APIServerConfigSchema>;

/**
 * Parses a server config and folds the deprecated `vllm_mode` into `server_type`, so the result
 * names exactly one server type (parsing it again gives the same).
 */
export function parseServerConfig(input: APIServerConfigInput): APIServerConfig {
  const config = APIServerConfigSchema.parse(input);
  const { vllm_mode, ...rest } = config;
  if (vllm_mode === "generate" && rest.server_type === "vllm") {
    return { ...rest, server_type: "atropos" };
  }
  return rest;
}

export function isServerType(value: string): value is ServerType {
  return (SERVER_TYPES as readonly string[]).includes(value);
}

/** The error for a `--server-type` / `server_type` value that is none of SERVER_TYPES. */
export function serverTypeError(value: string): Error {
  const lines = SERVER_TYPES.map((t) => `  ${t.padEnd(13)} ${SERVER_TYPE_HELP[t]}`);
  return new Error(
    `unknown server type ${JSON.stringify(value)}; use one of:\n${lines.join("\n")}`,
  );
}

export function tokenizerNameOf(config: APIServerConfig): string {
  return config.tokenizer_name === "none" ? config.model_name : config.tokenizer_name;
}
