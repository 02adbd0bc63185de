/**
 * `atropos-edge replay --run RUN [--enable|--disable] [--threshold T] [--capacity N]
 * [--max-replays N] [--fraction F]`: shows the run's replay buffer, or changes its settings
 * (PUT /v1/runs/{run}/replay) and shows the result.
 */
import type { Command } from "commander";
import { AdminClient } from "../client/admin-client";
import { type ReplayStatus, replayConfigRequestSchema } from "../core/api-schemas";
import { summarizeDetails, toValidationDetails } from "../core/validation";
import { type ConnectionOptions, connectionFrom } from "./mix-command";

export interface ReplayOptions {
  run: string;
  enable?: boolean;
  disable?: boolean;
  threshold?: string;
  capacity?: string;
  maxReplays?: string;
  fraction?: string;
}

function number(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) throw new Error(`${flag} must be a number`);
  return n;
}

export function formatReplay(r: ReplayStatus): string {
  return [
    `replay ${r.enabled ? "on" : "off"}: threshold ${r.threshold}, capacity ${r.capacity}, max_replays ${r.max_replays}, fraction ${r.fraction}`,
    `buffer: ${r.buffered_groups} group(s), ${r.replays_left} replay(s) left; ${r.replayed_sequences} sequence(s) replayed so far`,
  ].join("\n");
}

export async function runReplay(
  connection: ConnectionOptions,
  options: ReplayOptions,
): Promise<string> {
  if (options.enable && options.disable) throw new Error("give --enable or --disable, not both");
  const change = Object.fromEntries(
    Object.entries({
      enabled: options.enable ? true : options.disable ? false : undefined,
      threshold: number(options.threshold, "--threshold"),
      capacity: number(options.capacity, "--capacity"),
      max_replays: number(options.maxReplays, "--max-replays"),
      fraction: number(options.fraction, "--fraction"),
    }).filter(([, v]) => v !== undefined),
  );
  const parsed = replayConfigRequestSchema.safeParse(change);
  if (!parsed.success) {
    throw new Error(summarizeDetails(toValidationDetails(parsed.error, change)));
  }
  const client = new AdminClient({
    url: connection.api,
    token: connection.token,
    fetch: connection.fetch,
  });
  if (Object.keys(parsed.data).length > 0) await client.setReplay(options.run, parsed.data);
  return formatReplay(await client.replay(options.run));
}

export function registerReplayCommand(program: Command): void {
  program
    .command("replay")
    .description("show or change a run's replay buffer (off by default)")
    .requiredOption("--run <run>", "the run")
    .option("--api <url>", "rollout API URL")
    .option(
      "--token <t>",
      "a trainer or admin token (default $ATROPOS_EDGE_TOKEN, then $API_TOKEN)",
    )
    .option("--enable", "keep good groups and mix them into batches")
    .option("--disable", "stop replaying (the buffer is kept)")
    .option("--threshold <t>", "keep delivered groups with mean score >= t (default 0.7)")
    .option("--capacity <n>", "groups kept at most (default 1024)")
    .option("--max-replays <n>", "times one group may be replayed (default 1)")
    .option("--fraction <f>", "fraction of each batch's sequences replayed (default 0.3)")
    .action(async (o: ReplayOptions & { api?: string; token?: string }) => {
      console.log(await runReplay(connectionFrom(o), o));
    });
}
