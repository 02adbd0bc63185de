/**
 * `atropos-edge train --config atropos_config.yaml`: one file in the layout of
 * `training:` / `trajectory_collection:` / `judge:` / `tasks:` (plus `inference:` for the policy's
 * servers and `model:` for the trainer), read by the CLI's config loader and recognised by those
 * top-level keys. It becomes a `start` run of the agent_tasks env with a judge panel.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { z } from "zod";
import {
  CalibrationFileSchema,
  JUDGE_MODES,
  type JudgeCalibration,
  type JudgeEndpointInput,
  JudgeEndpointSchema,
  parseLabelledSet,
} from "../core/wire/judge-schemas";
import { SERVER_TYPES } from "../core/wire/server-config";
import { TASK_ORDERS, type Task } from "../core/wire/tasks";
import { JudgePanel, panelJudges } from "../env-sdk/judges/index";
import { parseTasksFile } from "./tasks-file";

/** The keys that mark this layout (any one of them). */
export const TRAIN_LAYOUT_KEYS = ["trajectory_collection", "judge", "tasks", "training"] as const;

const isMapping = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

export function isTrainLayout(file: Record<string, unknown>): boolean {
  return TRAIN_LAYOUT_KEYS.some((k) => isMapping(file[k]));
}

/** A judge entry: a model name, or an endpoint whose unset fields come from `judge:`. */
const JudgeModelSchema = z.union([
  z.string().min(1),
  z
    .object({
      name: z.string().min(1).optional(),
      base_url: z.string().min(1).optional(),
      model_name: z.string().min(1).optional(),
      server_type: z.enum(SERVER_TYPES).optional(),
      api_key: z.string().optional(),
      timeout: z.number().positive().optional(),
      temperature: z.number().min(0).optional(),
      max_tokens: z.number().int().positive().optional(),
    })
    .strict(),
]);

export const TrainConfigSchema = z
  .object({
    /** The trainer's business (base model, quantization): reported, not used here. */
    model: z.record(z.string(), z.unknown()).optional(),
    training: z
      .object({
        max_steps: z.number().int().positive().default(20),
        batch_size: z.number().int().positive().default(16),
        max_token_len: z.number().int().positive().default(2048),
        lease_seconds: z.number().int().positive().default(60),
        /** The trainer's own setting; the demo trainer's toy step size is 0.3. */
        learning_rate: z.number().positive().optional(),
        /** "demo", or a command that trains (it gets ATROPOS_EDGE_API_URL). */
        trainer: z
          .union([z.literal("demo"), z.object({ command: z.string().min(1) }).strict()])
          .default("demo"),
      })
      .strict()
      .default({
        max_steps: 20,
        batch_size: 16,
        max_token_len: 2048,
        lease_seconds: 60,
        trainer: "demo",
      }),
    trajectory_collection: z
      .object({
        /** Rollouts in flight at once. */
        n_workers: z.number().int().positive().default(4),
        max_steps_per_trajectory: z.number().int().positive().default(6),
        tools: z.array(z.string()).default(["calculator", "kv_get", "kv_set"]),
        group_size: z.number().int().min(2).default(4),
      })
      .strict()
      .default({
        n_workers: 4,
        max_steps_per_trajectory: 6,
        tools: ["calculator", "kv_get", "kv_set"],
        group_size: 4,
      }),
    judge: z
      .object({
        /** One judge model (a name served at base_url). */
        model: z.string().min(1).optional(),
        /** Judge models: names served at base_url, or endpoints of their own. */
        models: z.array(JudgeModelSchema).optional(),
        n_judges: z.number().int().positive().optional(),
        /** Where judges without a base_url live (default: the simulator, when there is no inference.url). */
        base_url: z.string().optional(),
        server_type: z.enum(SERVER_TYPES).default("openai"),
        api_key: z.string().default(""),
        mode: z.enum(JUDGE_MODES).default("pointwise"),
        min_judges: z.number().int().positive().default(2),
        calibration: z
          .object({
            /** Stored calibrations (written after fitting, read on later runs). */
            file: z.string().min(1),
            /** A labels JSONL file: when given, calibrations are fitted before training starts. */
            labels: z.string().min(1).optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
    tasks: z
      .object({
        task_file: z.string().min(1),
        order: z.enum(TASK_ORDERS).default("easy_first"),
        min_difficulty: z.number().int().min(1).max(10).default(1),
        max_difficulty: z.number().int().min(1).max(10).default(10),
        curriculum: z.enum(["none", "adaptive"]).default("none"),
      })
      .strict(),
    inference: z
      .object({
        /** The policy's server; absent = the in-process simulator (a test double). */
        url: z.string().min(1).optional(),
        server_type: z.enum(SERVER_TYPES).default("vllm"),
        model: z.string().min(1).default("sim-policy"),
        tokenizer: z.string().min(1).default("qwen3"),
        api_key: z.string().optional(),
      })
      .strict()
      .default({ server_type: "vllm", model: "sim-policy", tokenizer: "qwen3" }),
    api: z
      .object({
        port: z.number().int().positive().default(8787),
        persist_to: z.string().optional(),
      })
      .strict()
      .default({ port: 8787 }),
  })
  .strict();
export type TrainConfig = z.output<typeof TrainConfigSchema>;

/** Parses a loaded config file; errors name the file and every field to fix. */
export function parseTrainConfig(file: Record<string, unknown>, path: string): TrainConfig {
  if (!isTrainLayout(file)) {
    throw new Error(
      `${path}: not a train config (it needs one of ${TRAIN_LAYOUT_KEYS.map((k) => `${k}:`).join(", ")}); see docs/JUDGES.md`,
    );
  }
  const parsed = TrainConfigSchema.safeParse(file);
  if (!parsed.success) {
    const lines = parsed.error.issues.map(
      (i) => `  ${i.path.join(".") || "(top level)"}: ${i.message}`,
    );
    throw new Error(`${path}: invalid train config:\n${lines.join("\n")}`);
  }
  return parsed.data;
}

/**
 * The judges' endpoints; models without a base_url use judge.base_url, else `simulatorUrl` (null
 * when the policy runs on a real server: judges then need endpoints of their own).
 */
export function judgeEndpoints(
  config: TrainConfig,
  simulatorUrl: string | null,
): JudgeEndpointInput[] {
  const judge = config.judge;
  if (!judge) return [];
  const models = judge.models ?? (judge.model ? [judge.model] : []);
  const baseUrl = judge.base_url ?? simulatorUrl;
  return models.map((m, i) => {
    const entry: z.output<typeof JudgeModelSchema> & object =
      typeof m === "string" ? { model_name: m } : m;
    const model = entry.model_name ?? entry.name ?? `judge-${i + 1}`;
    const url = entry.base_url ?? baseUrl;
    if (!url) {
      throw new Error(
        `judge.models[${i}] (${entry.name ?? model}) has no base_url: with inference.url set, judges run on endpoints of their own (set judge.base_url or a base_url per model)`,
      );
    }
    return {
      server_type: judge.server_type,
      api_key: judge.api_key,
      ...entry,
      name: entry.name ?? model,
      model_name: model,
      base_url: url,
    };
  });
}

export function readTasks(config: TrainConfig, configPath: string): Task[] {
  const path = resolve(dirname(configPath), config.tasks.task_file);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new Error(`tasks.task_file: cannot read ${path} (${(err as Error).message})`);
  }
  return parseTasksFile(text, path);
}

/**
 * The stored calibrations, after fitting them first when `judge.calibration.labels` is set
 * (written back to `judge.calibration.file`). Returns the accepted-or-not fits by judge name and
 * one line per judge saying what happened.
 */
export async function judgeCalibrations(
  config: TrainConfig,
  configPath: string,
  endpoints: JudgeEndpointInput[],
): Promise<{ calibration: Record<string, JudgeCalibration>; lines: string[] }> {
  const cal = config.judge?.calibration;
  if (!cal) return { calibration: {}, lines: [] };
  const file = resolve(dirname(configPath), cal.file);
  if (!cal.labels) {
    if (!existsSync(file))
      return {
        calibration: {},
        lines: [`calibration: ${file} does not exist yet; judges run uncalibrated`],
      };
    const stored = CalibrationFileSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
    if (!stored.success)
      throw new Error(`judge.calibration.file ${file}: ${stored.error.issues[0]?.message}`);
    return { calibration: stored.data.judges, lines: [`calibration: read ${file}`] };
  }
  const labelsPath = resolve(dirname(configPath), cal.labels);
  const labels = parseLabelledSet(readFileSync(labelsPath, "utf8"), labelsPath);
  const judges = panelJudges(
    endpoints.map((e) => JudgeEndpointSchema.parse(e)),
    { n: config.judge?.n_judges },
  );
  const fitted = await new JudgePanel(judges).calibrate(
    labels.map((l) => ({ input: l, label: l.label })),
  );
  const calibration: Record<string, JudgeCalibration> = {};
  const lines: string[] = [];
  for (const [name, c] of Object.entries(fitted)) {
    if ("error" in c) {
      lines.push(`calibration ${name}: not fitted (${c.error})`);
      continue;
    }
    calibration[name] = c;
    lines.push(
      `calibration ${name}: ${c.accepted ? "accepted" : "rejected"} (held-out MAE ${c.heldout_mae_before.toFixed(3)} → ${c.heldout_mae_after.toFixed(3)}; scale ${c.scale.toFixed(3)}, offset ${c.offset.toFixed(3)})`,
    );
  }
  writeFileSync(file, `${JSON.stringify({ version: 1, judges: calibration }, null, 2)}\n`);
  lines.push(`calibration: wrote ${file}`);
  return { calibration, lines };
}

/** The agent_tasks env config this train config describes. */
export function agentTasksConfig(
  config: TrainConfig,
  tasks: Task[],
  judges: JudgeEndpointInput[],
  calibration: Record<string, JudgeCalibration>,
): Record<string, unknown> {
  const tc = config.trajectory_collection;
  return {
    tasks,
    tools: tc.tools,
    max_steps_per_trajectory: tc.max_steps_per_trajectory,
    group_size: tc.group_size,
    max_num_workers: tc.n_workers,
    judges,
    n_judges: config.judge?.n_judges ?? null,
    min_judges: config.judge?.min_judges ?? 2,
    judge_mode: config.judge?.mode ?? "pointwise",
    calibration,
    order: config.tasks.order,
    min_difficulty: config.tasks.min_difficulty,
    max_difficulty: config.tasks.max_difficulty,
    curriculum: config.tasks.curriculum,
  };
}

/** Why a model / training field the edge does not use is accepted, one line per field. */
function unusedFieldLine(config: TrainConfig, key: string, value: unknown): string {
  const shown = `${key} (${typeof value === "string" ? value : JSON.stringify(value)})`;
  const demo = config.training.trainer === "demo";
  const passedOn = demo ? "" : "; your trainer command gets it in ATROPOS_EDGE_TRAIN_CONFIG";
  if (key === "model.base_model") {
    return config.inference.url === undefined
      ? `${shown}: not loaded: the policy is the inference simulator, a test double (set inference.url to a server that serves this model)${passedOn}`
      : `${shown}: the policy is what ${config.inference.url} serves (inference.model names it)${passedOn}`;
  }
  if (key === "model.quantization") {
    return `${shown}: atropos-edge loads no weights; quantization is the inference server's setting (a GGUF file for llama.cpp, a vLLM flag)${passedOn}`;
  }
  if (key === "training.learning_rate" && demo) {
    return `${shown}: the demo trainer's toy policy takes its own step size (start --learning-rate, default 0.3); a trainer command gets it in ATROPOS_EDGE_TRAIN_CONFIG`;
  }
  return `${shown}: a setting for the trainer; atropos-edge does not use it${passedOn}`;
}

/** What `train` says before it starts: who does what, and why unused fields are accepted. */
export function trainPlanLines(config: TrainConfig): string[] {
  const trainer = config.training.trainer;
  const lines = [
    "atropos-edge train: collection (agent_tasks env), judging and the rollout API run here;",
    `gradient updates are the trainer's job (${trainer === "demo" ? "the demo trainer: GRPO advantages and a toy policy on the simulator, no model weights" : `your command: ${trainer.command}`}).`,
  ];
  for (const [k, v] of Object.entries(config.model ?? {})) {
    lines.push(unusedFieldLine(config, `model.${k}`, v));
  }
  if (config.training.learning_rate !== undefined) {
    lines.push(unusedFieldLine(config, "training.learning_rate", config.training.learning_rate));
  }
  return lines;
}
