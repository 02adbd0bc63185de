/**
 * `atropos-edge evaluate`: runs env.evaluateWithSamples() once and writes Atropos' evaluation
 * layout: DIR/metrics.json {"config_general":{…},"results":{"atropos|<task>|0":m,"all":m}} and
 * DIR/samples.jsonl (one record per evaluated example).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { envRegistry } from "../envs/index";
import { type EnvRef, envDefinitionOf } from "./env-loader";
import { createEnv, type InferenceFlags, openInference } from "./inference";

export interface EvaluateCommandOptions extends InferenceFlags {
  env: EnvRef;
  /** `env.*` fields from the config file and `--env.*` flags. */
  envConfig?: Record<string, unknown>;
  out: string;
}

export function metricsDocument(input: {
  task: string;
  model: string;
  seconds: number;
  generationParameters: Record<string, unknown>;
  metrics: Record<string, number>;
}) {
  return {
    config_general: {
      model_name: input.model,
      total_evaluation_time_seconds: input.seconds,
      generation_parameters: input.generationParameters,
    },
    results: { [`atropos|${input.task}|0`]: input.metrics, all: input.metrics },
  };
}

export function metricsTable(metrics: Record<string, number>): string {
  const names = Object.keys(metrics).sort();
  const width = Math.max(6, ...names.map((n) => n.length));
  const rows = names.map((n) => `${n.padEnd(width)}  ${Number(metrics[n]).toFixed(4)}`);
  return [`${"metric".padEnd(width)}  value`, `${"-".repeat(width)}  ------`, ...rows].join("\n");
}

export async function runEvaluate(
  options: EvaluateCommandOptions,
  log = console.log,
): Promise<number> {
  const definition = await envDefinitionOf(options.env);
  if (!definition.hasEvaluation) {
    const withEval = Object.values(envRegistry)
      .filter((d) => d.hasEvaluation)
      .map((d) => d.name);
    throw new Error(
      `env '${definition.name}' defines no evaluation (it overrides neither evaluate() nor evaluateWithSamples()); envs with one: ${withEval.join(", ") || "none"}`,
    );
  }
  const inference = await openInference(options);
  try {
    const env = await createEnv(definition, options.envConfig ?? {}, inference, options.tokenizer);
    await env.setup();
    const started = performance.now();
    const result = await env.evaluateWithSamples();
    const seconds = (performance.now() - started) / 1000;
    const config = env.config as unknown as Record<string, unknown>;
    const generationParameters = Object.fromEntries(
      ["temperature", "max_token_length", "top_p", "eval_size"]
        .filter((k) => config[k] !== undefined)
        .map((k) => [k, config[k]]),
    );
    mkdirSync(options.out, { recursive: true });
    const doc = metricsDocument({
      task: definition.name,
      model: options.model,
      seconds,
      generationParameters,
      metrics: result.metrics,
    });
    writeFileSync(join(options.out, "metrics.json"), `${JSON.stringify(doc, null, 2)}\n`);
    writeFileSync(
      join(options.out, "samples.jsonl"),
      result.samples.map((s) => `${JSON.stringify(s)}\n`).join(""),
    );
    log(metricsTable(result.metrics));
    log(
      `\n${result.samples.length} samples in ${seconds.toFixed(2)} s → ${join(options.out, "metrics.json")}, ${join(options.out, "samples.jsonl")} (${inference.describe})`,
    );
    return 0;
  } finally {
    await inference.close();
  }
}
