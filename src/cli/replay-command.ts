/**
 * `atropos-edge replay --run RUN [--enable|--disable] [--threshold T] [--capacity N]
 * [--max-replays N] [--fraction F]`: shows the run's replay buffer, or changes its settings
 * (PUT /v1/runs/{run}/replay) and shows the result.
 */
import type { Command } from "commander";
import { type ReplayStatus, replayConfigRequestSchema } from "../core/wire/api-schemas";
import {
  adminClientOf,
  type ConnectionOptions,
  changeOf,
  connectionFrom,
  numberFlag,
  withConnectionOptions,
} from "./run-control";

export interface ReplayOptions {
  run: string;
  enable?: boolean;
  disable?: boolean;
  threshold?: string;
  capacity?: string;
  maxReplays?: string;
  fraction?: string;
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
  const change = changeOf(replayConfigRequestSchema, {
    enabled: options.enable ? true : options.disable ? false : undefined,
    threshold: numberFlag(options.threshold, "--threshold"),
    capacity: numberFlag(options.capacity, "--capacity"),
    max_replays: numberFlag(options.maxReplays, "--max-replays"),
    fraction: numberFlag(options.fraction, "--fraction"),
  });
  const client = adminClientOf(connection);
  if (Object.keys(change).length > 0) await client.setReplay(options.run, change);
  return formatReplay(await client.replay(options.run));
}

export function registerReplayCommand(program: Command): void {
  withConnectionOptions(
    program
      .command("replay")
      .description("show or change a run's replay buffer (off by default)")
      .requiredOption("--run <run>", "the run"),
    "a trainer or admin",
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
