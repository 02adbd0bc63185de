/**
 * `atropos-edge export sft|dpo`: groups from a JSONL file or, READ-ONLY, from the API
 * (GET /v1/runs/{run}/groups and /groups/{id}; it never registers, leases or resets).
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { TrainerClient } from "../client/trainer-client";
import type { ScoredDataGroup } from "../core/group-types";
import { getTokenizer } from "../env-workers/tokenizers/index";
import { exportRecords } from "./export";
import { ProgressBar } from "./progress-bar";

export interface ExportCommandOptions {
  kind: "sft" | "dpo";
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

/** Oldest first, through the paginated read-only listing. */
export async function readGroupsFromApi(
  client: TrainerClient,
  maxGroups: number,
  stream: NodeJS.WriteStream = process.stderr,
): Promise<ScoredDataGroup[]> {
  const ids: number[] = [];
  let cursor: number | null = null;
  do {
    const page = await client.listGroups(cursor === null ? { limit: 200 } : { limit: 200, cursor });
    ids.push(...page.groups.map((g) => g.id));
    cursor = page.next_cursor;
  } while (cursor !== null && (maxGroups <= 0 || ids.length < maxGroups));
  const chosen = ids.reverse().slice(0, maxGroups > 0 ? maxGroups : undefined);
  const groups: ScoredDataGroup[] = [];
  // One request per group: show progress, large runs take a while.
  const bar = chosen.length > 0 ? new ProgressBar("reading groups", chosen.length, stream) : null;
  for (const id of chosen) {
    groups.push((await client.getGroup(id)).payload);
    bar?.update(groups.length);
  }
  return groups;
}

export async function runExport(options: ExportCommandOptions, log = console.log): Promise<number> {
  if (!options.from === !options.api)
    throw new Error("give exactly one of --from FILE.jsonl or --api URL");
  if (existsSync(options.out) && !options.append) {
    throw new Error(`${options.out} exists; pass --append to add to it or choose another --out`);
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
