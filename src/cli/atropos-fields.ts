/**
 * Every field of Atropos' env configuration (`BaseEnvConfig`), server configuration
 * (`APIServerConfig` / `ServerBaseline`) and top-level config keys, with what atropos-edge does
 * with it. This table is the one source for the CLI's config loader (what to apply, what to
 * accept with a warning) and for the generated table in docs/CONFIG.md
 * (`npx tsx scripts/gen-config-table.ts`).
 */

/** Command names whose CLI option a field sets; absent = every command that has the option. */
export type CommandName = "serve" | "process" | "evaluate" | "start";

export interface AtroposField {
  name: string;
  /** `env:` / `--env.*`, `openai:` / `--openai.*`, or a top-level key of the file. */
  section: "env" | "openai" | "top";
  /** Atropos' default, as written in Python. */
  atroposDefault: string;
  status: "used" | "ignored";
  /** Used: by what. Ignored: why. */
  note: string;
  /** The CLI option (camelCase key) this field sets instead of being passed on as is. */
  option?: { key: string; commands?: CommandName[] };
}

const used = (
  section: AtroposField["section"],
  name: string,
  atroposDefault: string,
  note: string,
  option?: AtroposField["option"],
): AtroposField => ({ name, section, atroposDefault, status: "used", note, option });

const ignored = (
  section: AtroposField["section"],
  name: string,
  atroposDefault: string,
  note: string,
): AtroposField => ({ name, section, atroposDefault, status: "ignored", note });

const NO_WANDB =
  "envs do not log to W&B themselves: their metrics go to the run's metrics store, which `atropos-edge wandb` logs to W&B";

export const ATROPOS_FIELDS: readonly AtroposField[] = [
  used("env", "group_size", "4", "rollouts per group; registration and the send-time size check"),
  used("env", "max_num_workers", "-1", "serve: groups in flight (-1: per node × servers)"),
  used("env", "max_eval_workers", "16", "evaluate(): concurrent eval requests (gsm8k_lite)"),
  used(
    "env",
    "max_num_workers_per_node",
    "8",
    "serve: workers per server when max_num_workers is -1",
  ),
  used(
    "env",
    "steps_per_eval",
    "100",
    "serve: evaluate() when the trainer step crosses a multiple",
  ),
  used("env", "max_token_length", "2048", "registration weight; generation limit of the envs"),
  used("env", "eval_handling", "STOP_TRAIN", "serve: what training workers do during evaluate()"),
  used("env", "eval_limit_ratio", "0.5", "serve: share of workers kept with LIMIT_TRAIN"),
  used("env", "inference_weight", "1.0", "registration `weight`"),
  used("env", "batch_size", "-1", "serve: backpressure (-1: from GET /info)"),
  used("env", "max_batches_offpolicy", "3", "serve: backpressure"),
  used(
    "env",
    "tokenizer_name",
    "NousResearch/DeepHermes-3-Llama-3-3B-Preview",
    "the tokenizer (same as --tokenizer)",
    { key: "tokenizer" },
  ),
  ignored("env", "use_wandb", "True", NO_WANDB),
  used(
    "env",
    "rollout_server_url",
    "http://localhost:8000",
    "serve: the rollout API (same as --api)",
    {
      key: "api",
      commands: ["serve"],
    },
  ),
  used("env", "total_steps", "1000", "serve: stop condition (-1: num_steps from registration)"),
  used("env", "wandb_name", "None", "`desired_name` at registration"),
  ignored("env", "num_rollouts_to_keep", "32", `size of the wandb rollout table; ${NO_WANDB}`),
  ignored("env", "num_rollouts_per_group_for_logging", "1", `wandb rollout table; ${NO_WANDB}`),
  used("env", "ensure_scores_are_not_same", "True", "send-time check: drop groups of equal scores"),
  used(
    "env",
    "data_path_to_save_groups",
    "None",
    "process: the output JSONL (same as --out); serve: every valid group is appended to it",
    { key: "out", commands: ["process"] },
  ),
  used("env", "data_dir_to_save_evals", "None", "evaluate: the output directory (same as --out)", {
    key: "out",
    commands: ["evaluate"],
  }),
  ignored("env", "min_items_sent_before_logging", "2", `paces wandb logging; ${NO_WANDB}`),
  used("env", "include_messages", "False", "send-time: synthesize messages from tokens"),
  used("env", "min_batch_allocation", "None", "registration: minimum share of every batch"),
  used(
    "env",
    "worker_timeout",
    "600",
    "serve and Worker envs: in-flight group abandoned after this",
  ),
  ignored(
    "env",
    "thinking_mode",
    "False",
    "reasoning settings are not injected into chat calls; pass them in your env's requests",
  ),
  ignored("env", "reasoning_effort", "None", "see thinking_mode"),
  ignored("env", "max_reasoning_tokens", "None", "see thinking_mode"),
  ignored(
    "env",
    "custom_thinking_prompt",
    "None",
    "BaseEnv never reads it (Atropos' eval envs do); declare it in your env's config to use it",
  ),

  used("openai", "base_url", '""', "the inference server (same as --inference-url)", {
    key: "inferenceUrl",
  }),
  used("openai", "api_key", '""', "bearer key for the inference server (same as --api-key)", {
    key: "apiKey",
  }),
  used("openai", "model_name", '"default"', "model sent to the server (same as --model)", {
    key: "model",
  }),
  used(
    "openai",
    "server_type",
    '"openai"',
    "which server (same as --server-type): vllm, vllm-generate, atropos, sglang, trl, openai; Atropos' `vllm` (its /generate server) is `atropos` here",
    { key: "serverType" },
  ),
  used("openai", "tokenizer_name", '"none"', 'tokenizer (same as --tokenizer); "none": ignored', {
    key: "tokenizer",
  }),
  used("openai", "timeout", "1200", "seconds per inference request"),
  used("openai", "num_max_requests_at_once", "512", "train requests in flight per server"),
  used("openai", "num_requests_for_eval", "64", "eval requests in flight per server"),
  used("openai", "health_check", "True", "probe an unhealthy server before routing to it again"),
  used("openai", "n_kwarg_is_ignored", "False", "send n requests instead of one with n"),
  ignored("openai", "rolling_buffer_length", "1000", "unused in Atropos as well"),

  ignored("top", "slurm", "False", "no SLURM node discovery: list every server under openai:"),
  ignored(
    "top",
    "testing",
    "False",
    "no canned-response harness: the CLI's simulator is the test double",
  ),
  ignored(
    "top",
    "max_n_completions",
    "8",
    "Atropos never passes it to its ServerManager; set it per server under openai:",
  ),
  ignored("top", "proxy_url", "None", "no ManagedServer proxy; envs track tokens in-process"),
];

/** atropos-edge's own server fields (not in Atropos), accepted under `openai:`. */
export const EDGE_SERVER_FIELDS = ["max_n_completions", "vllm_mode"] as const;

export function atroposField(
  section: AtroposField["section"],
  name: string,
): AtroposField | undefined {
  return ATROPOS_FIELDS.find((f) => f.section === section && f.name === name);
}

export const GENERATED_BEGIN = "<!-- BEGIN GENERATED by scripts/gen-config-table.ts -->";
export const GENERATED_END = "<!-- END GENERATED -->";

const SECTION_TITLES: Record<AtroposField["section"], string> = {
  env: "`env:` / `--env.<field>` (Atropos BaseEnvConfig)",
  openai: "`openai:` / `--openai.<field>` (Atropos APIServerConfig / ServerBaseline)",
  top: "Top-level keys (Atropos ServerManagerConfig)",
};

/** The docs/CONFIG.md table of every Atropos field (between the GENERATED markers). */
export function renderAtroposFieldTable(): string {
  const cell = (text: string) => text.replace(/\|/g, "\\|");
  const parts: string[] = [];
  for (const section of ["env", "openai", "top"] as const) {
    parts.push(`### ${SECTION_TITLES[section]}`, "");
    parts.push("| field | Atropos default | here |", "|---|---|---|");
    for (const f of ATROPOS_FIELDS.filter((x) => x.section === section)) {
      const status = f.status === "used" ? `used: ${f.note}` : `accepted and ignored: ${f.note}`;
      parts.push(`| \`${f.name}\` | \`${cell(f.atroposDefault)}\` | ${cell(status)} |`);
    }
    parts.push("");
  }
  return [GENERATED_BEGIN, "", ...parts, GENERATED_END].join("\n");
}

/** `doc` with the text between the GENERATED markers replaced by the current table. */
export function withGeneratedTable(doc: string): string {
  const start = doc.indexOf(GENERATED_BEGIN);
  const end = doc.indexOf(GENERATED_END);
  if (start < 0 || end < start) throw new Error("docs/CONFIG.md has no GENERATED markers");
  return doc.slice(0, start) + renderAtroposFieldTable() + doc.slice(end + GENERATED_END.length);
}
