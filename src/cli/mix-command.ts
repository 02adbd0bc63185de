/**
 * `atropos-edge mix ENV_ID --run RUN [--weight W] [--min-batch-allocation F|none] [--pause|--resume]`:
 * changes a running run's env mix (PATCH /v1/runs/{run}/envs/{id}); envs see it at their next
 * /status-env poll or feeder tick.
 */
import type { Command } from "commander";
import { type EnvControl, envControlRequestSchema } from "../core/wire/api-schemas";
import {
  adminClientOf,
  type ConnectionOptions,
  changeOf,
  connectionFrom,
  numberFlag,
  withConnectionOptions,
} from "./run-control";

export interface MixOptions {
  run: string;
  weight?: string;
  minBatchAllocation?: string;
  pause?: boolean;
  resume?: boolean;
}

export function formatEnvControl(e: EnvControl): string {
  const allocation = e.min_batch_allocation === null ? "none" : String(e.min_batch_allocation);
  return `env ${e.env_id} (${e.name}): weight ${e.weight}, min_batch_allocation ${allocation}, ${e.paused ? "paused" : "running"}`;
}

export async function runMix(
  connection: ConnectionOptions,
  envIdText: string,
  options: MixOptions,
): Promise<string> {
  const envId = Number(envIdText);
  if (!Number.isInteger(envId) || envId < 0) {
    throw new Error(`ENV_ID must be a non-negative integer (got '${envIdText}')`);
  }
  if (options.pause && options.resume) throw new Error("give --pause or --resume, not both");
  const allocation = options.minBatchAllocation;
  const change = changeOf(envControlRequestSchema, {
    weight: numberFlag(options.weight, "--weight"),
    min_batch_allocation:
      allocation === "none" ? null : numberFlag(allocation, "--min-batch-allocation"),
    paused: options.pause ? true : options.resume ? false : undefined,
  });
  return formatEnvControl(await adminClientOf(connection).updateEnv(options.run, envId, change));
}

export function registerMixCommand(program: Command): void {
  withConnectionOptions(
    program
      .command("mix")
      .description("change an env's weight, minimum batch allocation, or pause/resume it mid-run")
      .argument("<env_id>", "the env's id in the run (GET /v1/runs/{run}/stats lists them)")
      .requiredOption("--run <run>", "the run"),
    "a trainer or admin",
  )
    .option("--weight <w>", "the env's weight (> 0)")
    .option("--min-batch-allocation <f>", "fraction of each batch reserved (0..1), or none")
    .option("--pause", "stop the env sampling (zero quota in /status-env)")
    .option("--resume", "let a paused env sample again")
    .action(async (envId: string, o: MixOptions & { api?: string; token?: string }) => {
      console.log(await runMix(connectionFrom(o), envId, o));
    });
}
