/** `atropos-edge process`: offline rollouts to JSONL + a self-contained HTML report next to it. */
import { createWriteStream, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { ScoredDataGroup } from "../core/wire/group-types";
import { groupToJsonl, processEnv } from "../env-sdk/runtime/process";
import { getTokenizer } from "../inference/tokenizers/index";
import { type EnvRef, envDefinitionOf } from "./env-loader";
import { renderGroupsReport } from "./html-report";
import { createEnv, type InferenceFlags, openInference } from "./inference";
import { ProgressBar } from "./progress-bar";

export interface ProcessCommandOptions extends InferenceFlags {
  env: EnvRef;
  /** `env.*` fields from the config file and `--env.*` flags. */
  envConfig?: Record<string, unknown>;
  groups: number;
  out: string;
  concurrency: number;
  groupSize?: number;
  /** Overwrite --out and its report when they exist. */
  force?: boolean;
}

export function reportPathFor(jsonlPath: string): string {
  return `${jsonlPath.replace(/\.jsonl$/i, "")}.html`;
}

export async function runProcess(
  options: ProcessCommandOptions,
  log = console.log,
): Promise<number> {
  if (options.groups < 1) throw new Error("--groups must be at least 1");
  // Checked before any rollout: a finished run's data is not lost to a repeated command.
  const existing = [options.out, reportPathFor(options.out)].filter((f) => existsSync(f));
  if (existing.length > 0 && !options.force) {
    throw new Error(
      `${existing.join(" and ")} exist${existing.length === 1 ? "s" : ""}; pass --force to overwrite or choose another --out`,
    );
  }
  const definition = await envDefinitionOf(options.env);
  const inference = await openInference(options);
  try {
    const env = await createEnv(
      definition,
      { ...options.envConfig, ...(options.groupSize ? { group_size: options.groupSize } : {}) },
      inference,
      options.tokenizer,
    );
    mkdirSync(dirname(options.out), { recursive: true });
    const file = createWriteStream(options.out);
    const groups: ScoredDataGroup[] = [];
    const bar = new ProgressBar(`process ${env.name}`, options.groups);
    const progress = await processEnv(env, {
      groups: options.groups,
      concurrency: options.concurrency,
      onProgress: (p) => bar.update(p.produced, `${p.dropped} dropped, ${p.failures} failed`),
      onGroup: (group) => {
        groups.push(group);
        file.write(groupToJsonl(group));
      },
    });
    bar.finish();
    await new Promise<void>((resolve, reject) =>
      file.end((err?: Error | null) => (err ? reject(err) : resolve())),
    );
    const tokenizer = await getTokenizer(options.tokenizer);
    const report = reportPathFor(options.out);
    writeFileSync(
      report,
      renderGroupsReport(groups, {
        title: `${env.name}: ${groups.length} groups`,
        decodeToken: (id) => tokenizer.decode([id]),
      }),
    );
    log(
      `wrote ${progress.produced}/${options.groups} groups to ${options.out} and ${report} ` +
        `(${progress.itemsUsed} items, ${progress.dropped} dropped, ${progress.failures} failures; ${inference.describe})`,
    );
    for (const [reason, n] of Object.entries(progress.dropReasons))
      log(`  dropped ${n}× ${reason}`);
    return progress.produced === options.groups ? 0 : 1;
  } finally {
    await inference.close();
  }
}
