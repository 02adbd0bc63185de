/**
 * `atropos-edge mix ENV_ID --run RUN [--weight W] [--min-batch-allocation F|none] [--pause|--resume]`:
 * changes a running run's env mix (PATCH /v1/runs/{run}/envs/{id}); envs see it at their next
 * /status-env poll or feeder tick.
 */
import type { Command } from "commander";
import { AdminClient } from "../client/admin-client";
import { type EnvControl, envControlRequestSchema } from "../core/api-schemas";
import { summarizeDetails, toValidationDetails } from "../core/validation";

export interface ConnectionOptions {
  api: string;
  token?: string;
  fetch?: typeof fetch;
}

export interface MixOptions {
  run: string;
  weight?: string;
  minBatchAllocation?: string;
  pause?: boolean;
  resume?: boolean;
}

function number(value: string, flag: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) throw new Error(`${flag} must be a number`);
  return n;
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
  const change = {
    ...(options.weight !== undefined ? { weight: number(options.weight, "--weight") } : {}),
    ...(allocation !== undefined
      ? {
          min_batch_allocation:
            allocation === "none" ? null : number(allocation, "--min-batch-allocation"),
        }
      : {}),
    ...(options.pause ? { paused: true } : options.resume ? { paused: false } : {}),
  };
  const parsed = envControlRequestSchema.safeParse(change);
  if (!parsed.success) {
    throw new Error(summarizeDetails(toValidationDetails(parsed.error, change)));
  }
  const client = new AdminClient({
    url: connection.api,
    token: connection.token,
    fetch: connection.fetch,
  });
  return formatEnvControl(await client.updateEnv(options.run, envId, parsed.data));
}

export function connectionFrom(o: { api?: string; token?: string }): ConnectionOptions {
  if (!o.api) throw new Error("--api <url> is required (the deployment's URL)");
  const token = o.token ?? process.env.ATROPOS_EDGE_TOKEN ?? process.env.API_TOKEN;
  return { api: o.api, ...(token ? { token } : {}) };
}

export function registerMixCommand(program: Command): void {
  program
    .command("mix")
    .description("change an env's weight, minimum batch allocation, or pause/resume it mid-run")
    .argument("<env_id>", "the env's id in the run (GET /v1/runs/{run}/stats lists them)")
    .requiredOption("--run <run>", "the run")
    .option("--api <url>", "rollout API URL")
    .option(
      "--token <t>",
      "a trainer or admin token (default $ATROPOS_EDGE_TOKEN, then $API_TOKEN)",
    )
    .option("--weight <w>", "the env's weight (> 0)")
    .option("--min-batch-allocation <f>", "fraction of each batch reserved (0..1), or none")
    .option("--pause", "stop the env sampling (zero quota in /status-env)")
    .option("--resume", "let a paused env sample again")
    .action(async (envId: string, o: MixOptions & { api?: string; token?: string }) => {
      console.log(await runMix(connectionFrom(o), envId, o));
    });
}
