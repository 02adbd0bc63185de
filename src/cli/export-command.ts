/**
 * `atropos-edge export sft|dpo|trajectories`: groups from a JSONL file or, READ-ONLY, from the API
 * (GET /v1/runs/{run}/groups, /groups/{id} and /groups/{id}/trajectories; it never registers,
 * leases or resets).
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { TrainerClient } from "../client/trainer-client";
import type { ScoredDataGroup } from "../core/wire/group-types";
import type { Trajectory } from "../core/wire/trajectory";
import { getTokenizer } from "../inference/tokenizers/index";
import { exportRecords } from "./export";
import { ProgressBar } from "./progress-bar";

export interface ExportCommandOptions {
  kind: "sft" | "dpo" | "trajectories";
  from?: string;
  api?: string;
  run: string;
  token?: string;
  out: string;
  topN: number;
  minScoreDiff: number;
  allowNegativeScores: boolean;
  saveMessages: boolean;
  maxRecords: number;
  maxGroups: number;
  tokenizer: string;
  seed: number;
  append: boolean;
}

export function readGroupsJsonl(path: string): ScoredDataGroup[] {
  const lines = readFileSync(path, "utf8").split("\n");
  const groups: ScoredDataGroup[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === "") return;
    try {
      groups.push(JSON.parse(line) as ScoredDataGroup);
    } catch {
      throw new Error(`${path}:${i + 1} is not a JSON group`);
    }
  });
  return groups;
}

/** Group ids, oldest first, through the paginated read-only listing. */
async function groupIdsFromApi(client: TrainerClient, maxGroups: number): Promise<number[]> {
  const ids: number[] = [];
  let cursor: number | null = null;
  do {
    const page = await client.listGroups(cursor === null ? { limit: 200 } : { limit: 200, cursor });
    ids.push(...page.groups.map((g) => g.id));
    cursor = page.next_cursor;
  } while (cursor !== null && (maxGroups <= 0 || ids.length < maxGroups));
  return ids.reverse().slice(0, maxGroups > 0 ? maxGroups : undefined);
}

/** Oldest first, through the paginated read-only listing. */
export async function readGroupsFromApi(
  client: TrainerClient,
  maxGroups: number,
  stream: NodeJS.WriteStream = process.stderr,
): Promise<ScoredDataGroup[]> {
  const chosen = await groupIdsFromApi(client, maxGroups);
  const groups: ScoredDataGroup[] = [];
  // One request per group: show progress, large runs take a while.
  const bar = chosen.length > 0 ? new ProgressBar("reading groups", chosen.length, stream) : null;
  for (const id of chosen) {
    groups.push((await client.getGroup(id)).payload);
    bar?.update(groups.length);
  }
  return groups;
}

/** One record per trajectory: the trajectory, its group and the score of its sequence. */
export interface TrajectoryRecord extends Trajectory {
  group_id: number | null;
  score: number | null;
}

async function trajectoryRecords(options: ExportCommandOptions): Promise<TrajectoryRecord[]> {
  const records: TrajectoryRecord[] = [];
  if (options.from) {
    for (const group of readGroupsJsonl(options.from)) {
      for (const t of group.trajectories ?? []) {
        records.push({ ...t, group_id: null, score: group.scores[t.sequence] ?? null });
      }
    }
    return records;
  }
  const client = new TrainerClient({ url: options.api!, run: options.run, token: options.token });
  for (const id of await groupIdsFromApi(client, options.maxGroups)) {
    const { trajectories } = await client.getTrajectories(id);
    if (trajectories.length === 0) continue;
    const { payload } = await client.getGroup(id);
    for (const t of trajectories) {
      records.push({ ...t, group_id: id, score: payload.scores[t.sequence] ?? null });
    }
  }
  return records;
}

export async function runExport(options: ExportCommandOptions, log = console.log): Promise<number> {
  if (!options.from === !options.api)
    throw new Error("give exactly one of --from FILE.jsonl or --api URL");
  if (existsSync(options.out) && !options.append) {
    throw new Error(`${options.out} exists; pass --append to add to it or choose another --out`);
  }
  if (options.kind === "trajectories") {
    const all = await trajectoryRecords(options);
    const records = options.maxRecords > 0 ? all.slice(0, options.maxRecords) : all;
    const text = records.map((r) => `${JSON.stringify(r)}\n`).join("");
    if (options.append) appendFileSync(options.out, text);
    else writeFileSync(options.out, text);
    log(`trajectories: ${records.length} records → ${options.out}`);
    return 0;
  }
  const groups = options.from
    ? readGroupsJsonl(options.from)
    : await readGroupsFromApi(
        new TrainerClient({ url: options.api!, run: options.run, token: options.token }),
        options.maxGroups,
      );
  if (groups.length === 0 && options.api) {
    // An empty run is almost always a wrong --run (runs are created by their first request).
    log(
      `warning: run '${options.run}' at ${options.api} has no groups; check --run (GET /v1/runs lists the runs)`,
    );
  }
  const tokenizer = options.saveMessages ? null : await getTokenizer(options.tokenizer);
  const records = exportRecords(options.kind, groups, {
    topN: options.topN,
    minScoreDiff: options.minScoreDiff,
    allowNegativeScores: options.allowNegativeScores,
    saveMessages: options.saveMessages,
    decode: tokenizer ? (ids) => tokenizer.decode(ids) : undefined,
    seed: options.seed,
    maxRecords: options.maxRecords,
  });
  const text = records.map((r) => `${JSON.stringify(r)}\n`).join("");
  if (options.append) appendFileSync(options.out, text);
  else writeFileSync(options.out, text);
  log(`${options.kind}: ${records.length} records from ${groups.length} groups → ${options.out}`);
  return 0;
}
