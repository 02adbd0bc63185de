/** `atropos-edge train --config FILE`: start from one config file (train-command.ts). */
import type { Command } from "commander";
import { type AddOptions, opt, str } from "./options";

export function registerTrainCommand(program: Command, options: AddOptions): void {
  options(
    program
      .command("train")
      .description(
        "start with one config file (training, trajectory_collection, judge, tasks, inference): the agent_tasks env, a judge panel, the API and the trainer",
      ),
    [
      opt("--steps <n>", "steps", "trainer steps (default: training.max_steps)", undefined),
      opt("--port <port>", "port", "port of the local API (default: api.port or 8787)", undefined),
      opt("--max-seconds <s>", "maxSeconds", "fail if not done in this time (0 = never)", 0),
      opt(
        "--summary-json <file>",
        "summaryJson",
        "write the per-step learning curve as JSON",
        undefined,
      ),
      opt(
        "--output <dir>",
        "output",
        "write the run's trajectories, metrics, summary, judge calibration and the toy policy's weights here",
        undefined,
      ),
      opt(
        "--engine <file.gguf>",
        "engine",
        "run this GGUF model on the llama.cpp engine in-process instead of the simulator (docs/INFERENCE.md)",
        undefined,
      ),
      opt("--sim-latency-ms <ms>", "simLatencyMs", "simulator latency per request", 0),
      opt("--sim-seed <n>", "simSeed", "simulator seed", 0),
    ],
    async (o, _args, env) => {
      if (!env.configFile) {
        throw new Error("train needs --config atropos_config.yaml (docs/JUDGES.md)");
      }
      const { runTrain } = await import("../train-command");
      return runTrain({
        configPath: env.configFile.path,
        file: env.configFile.contents,
        steps: str(o.steps) === undefined ? undefined : Number(o.steps),
        port: str(o.port) === undefined ? undefined : Number(o.port),
        maxSeconds: Number(o.maxSeconds),
        summaryJson: str(o.summaryJson),
        output: str(o.output),
        simLatencyMs: Number(o.simLatencyMs),
        simSeed: Number(o.simSeed),
      });
    },
  );
}
