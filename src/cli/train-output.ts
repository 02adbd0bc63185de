/**
 * `atropos-edge train --output DIR`: what the run produced, written while its API still answers
 * (docs/JUDGES.md lists the files). The trajectories and the metrics come from the API, as
 * `atropos-edge export trajectories` and `atropos-edge metrics` would read them; the calibration
 * is the one the judges used; the weights are the demo trainer's toy policy (a trainer command
 * writes its own, into ATROPOS_EDGE_OUTPUT_DIR).
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { JudgeCalibration } from "../core/wire/judge-schemas";
import { type PolicyWeights, type PolicyWeightsFile, WEIGHTS_FORMAT } from "../sim/policy";
import { runExport } from "./export-command";
import { exportMetrics } from "./metrics-command";

/** The files of an output directory, by what they hold. */
export const TRAIN_OUTPUT_FILES = {
  trajectories: "trajectories.jsonl",
  metrics: "metrics.jsonl",
  summary: "run_summary.json",
  calibration: "judge_calibration.json",
  weights: "policy_weights.json",
} as const;

/** What a finished run leaves for its outputs (the API is still up when this is read). */
export interface FinishedRun {
  apiUrl: string;
  run: string;
  /** The demo trainer's final toy-policy weights; null when another trainer trained. */
  policyWeights: PolicyWeights | null;
}

export function prepareOutputDir(dir: string): void {
  mkdirSync(dir, { recursive: true });
}

/** The judges' calibration, in the calibration file's format (reusable as judge.calibration.file). */
export function writeCalibration(dir: string, judges: Record<string, JudgeCalibration>): string {
  const path = join(dir, TRAIN_OUTPUT_FILES.calibration);
  writeFileSync(path, `${JSON.stringify({ version: 1, judges }, null, 2)}\n`);
  return path;
}

/** Trajectories, metrics and the toy policy's weights; one line per file written. */
export async function writeRunOutputs(dir: string, finished: FinishedRun): Promise<string[]> {
  const lines: string[] = [];
  const log = (line: string) => lines.push(`output: ${line}`);
  const trajectories = join(dir, TRAIN_OUTPUT_FILES.trajectories);
  const metrics = join(dir, TRAIN_OUTPUT_FILES.metrics);
  // train owns its output directory: a second run into it replaces the files.
  for (const path of [trajectories, metrics]) rmSync(path, { force: true });
  await runExport(
    {
      kind: "trajectories",
      api: finished.apiUrl,
      run: finished.run,
      out: trajectories,
      topN: 0,
      minScoreDiff: 0,
      allowNegativeScores: true,
      saveMessages: false,
      maxRecords: 0,
      maxGroups: 0,
      tokenizer: "qwen3",
      seed: 0,
      append: false,
    },
    log,
  );
  await exportMetrics({ api: finished.apiUrl, run: finished.run, out: metrics }, log);
  if (finished.policyWeights) {
    const path = join(dir, TRAIN_OUTPUT_FILES.weights);
    const file: PolicyWeightsFile = { format: WEIGHTS_FORMAT, weights: finished.policyWeights };
    writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`);
    log(`the toy policy's final weights → ${path}`);
  }
  return lines;
}
