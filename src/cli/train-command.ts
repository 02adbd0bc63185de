/**
 * `atropos-edge train --config FILE`: reads the train layout (src/cli/train-config.ts), loads the
 * tasks file, resolves the judges (on the simulator when no inference url is set), fits or reads
 * their calibrations, and runs `start` with the agent_tasks env and the configured trainer.
 */
import { join, resolve } from "node:path";
import { getEnvDefinition } from "../envs/index";
import { runStart } from "./start";
import {
  agentTasksConfig,
  judgeCalibrations,
  judgeEndpoints,
  parseTrainConfig,
  readTasks,
  trainPlanLines,
} from "./train-config";
import {
  prepareOutputDir,
  TRAIN_OUTPUT_FILES,
  writeCalibration,
  writeRunOutputs,
} from "./train-output";

export interface TrainOptions {
  configPath: string;
  file: Record<string, unknown>;
  /** Overrides training.max_steps. */
  steps?: number;
  /** Overrides api.port. */
  port?: number;
  maxSeconds: number;
  summaryJson?: string;
  /** Write what the run produces here (src/cli/train-output.ts lists the files). */
  output?: string;
  simLatencyMs: number;
  simSeed: number;
}

export async function runTrain(
  options: TrainOptions,
  out: NodeJS.WriteStream = process.stdout,
): Promise<number> {
  const config = parseTrainConfig(options.file, options.configPath);
  // Checked before anything starts: a bad tasks file fails in a second.
  const tasks = readTasks(config, options.configPath);
  const def = getEnvDefinition("agent_tasks");
  const trainer = config.training.trainer;
  const judged = tasks.some((t) => t.evaluation.kind === "judge");
  // Fails now, not after the dev server started, when a judge has no endpoint.
  const simulated = config.inference.url === undefined;
  if (judged && judgeEndpoints(config, simulated ? "http://simulator/v1" : null).length === 0) {
    throw new Error(
      `${options.configPath}: tasks with a judge rubric need judge.model or judge.models`,
    );
  }
  for (const line of trainPlanLines(config)) out.write(`${line}\n`);
  const output = options.output === undefined ? undefined : resolve(options.output);
  if (output) prepareOutputDir(output);
  const base = agentTasksConfig(config, tasks, [], {});
  return runStart(
    {
      command: "train",
      inferenceUrl: config.inference.url,
      serverType: config.inference.server_type,
      model: config.inference.model,
      tokenizer: config.inference.tokenizer,
      apiKey: config.inference.api_key,
      simLatencyMs: options.simLatencyMs,
      simSeed: options.simSeed,
      steps: options.steps ?? config.training.max_steps,
      port: options.port ?? config.api.port,
      envs: def.name,
      envDefinitions: [def],
      envModules: [null],
      envConfigs: [base],
      batchSize: config.training.batch_size,
      maxTokenLen: config.training.max_token_len,
      persistTo: config.api.persist_to,
      leaseSeconds: config.training.lease_seconds,
      maxSeconds: options.maxSeconds,
      summaryJson:
        options.summaryJson ?? (output ? join(output, TRAIN_OUTPUT_FILES.summary) : undefined),
      ...(output ? { onFinished: (finished) => writeRunOutputs(output, finished) } : {}),
      prepareEnvConfigs: async (inference) => {
        const judges = judgeEndpoints(
          config,
          inference.simulator ? `${inference.simulator.url}/v1` : null,
        );
        const { calibration, lines } = await judgeCalibrations(config, options.configPath, judges);
        const names = judges.map((j) => `${j.name} (${j.model_name} at ${j.base_url})`);
        if (output)
          lines.push(`output: judge calibration → ${writeCalibration(output, calibration)}`);
        return {
          envConfigs: [agentTasksConfig(config, tasks, judges, calibration)],
          lines: [
            `tasks: ${tasks.length} from ${config.tasks.task_file}; judges: ${names.join(", ") || "none"} (${config.judge?.mode ?? "pointwise"})`,
            ...lines,
          ],
        };
      },
      ...(trainer === "demo"
        ? {}
        : {
            trainerCommand: trainer.command,
            trainerEnv: {
              ATROPOS_EDGE_TRAIN_CONFIG: JSON.stringify(config),
              ATROPOS_EDGE_BATCH_SIZE: String(config.training.batch_size),
              ATROPOS_EDGE_MAX_STEPS: String(options.steps ?? config.training.max_steps),
              ...(output ? { ATROPOS_EDGE_OUTPUT_DIR: output } : {}),
            },
          }),
    },
    out,
  );
}
