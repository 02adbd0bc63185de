/**
 * `atropos-edge metrics`: the run's metrics store as JSONL (one value per line), and
 * `atropos-edge wandb`: the store copied to W&B as Atropos lays its runs out (wandb-sync.ts).
 */
import { createWriteStream } from "node:fs";
import type { MetricSeries } from "../core/wire/api-schemas";
import { HttpClient, parseJsonAnswer } from "../core/wire/http-client";
import { WandbSync } from "./wandb-sync";

export interface MetricsExportOptions {
  api: string;
  run: string;
  token?: string;
  out: string;
  /** Comma-separated names (a trailing `*` is a prefix), as GET /v1/runs/{run}/metrics takes. */
  name?: string;
  fetch?: typeof fetch;
}

/** One JSONL record per value, by step. */
export interface MetricRecord {
  step: number;
  policy_version: number | null;
  env_id: number | null;
  kind: MetricSeries["kind"];
  name: string;
  value: number;
}

export function metricRecords(series: MetricSeries[]): MetricRecord[] {
  const records = series.flatMap((s) =>
    s.steps.map((step, i) => ({
      step,
      policy_version: s.policy_versions[i] ?? null,
      env_id: s.env_id,
      kind: s.kind,
      name: s.name,
      value: s.values[i]!,
    })),
  );
  return records.sort((a, b) => a.step - b.step || a.name.localeCompare(b.name));
}

export async function exportMetrics(
  options: MetricsExportOptions,
  log: (line: string) => void = console.log,
): Promise<number> {
  const http = new HttpClient({
    token: options.token,
    attempts: 3,
    baseDelayMs: 500,
    maxDelayMs: 5000,
    fetch: options.fetch,
  });
  const query = options.name ? `?name=${encodeURIComponent(options.name)}` : "";
  const url = `${options.api.replace(/\/+$/, "")}/v1/runs/${encodeURIComponent(options.run)}/metrics${query}`;
  const answer = parseJsonAnswer<{ series: MetricSeries[]; truncated: boolean }>(
    await http.send("GET", url),
    "metrics",
  );
  const records = metricRecords(answer.series);
  const out = createWriteStream(options.out);
  for (const r of records) out.write(`${JSON.stringify(r)}\n`);
  await new Promise<void>((resolve, reject) =>
    out.end((err?: Error | null) => (err ? reject(err) : resolve())),
  );
  log(
    `${records.length} values of run ${options.run} → ${options.out}${answer.truncated ? " (truncated: narrow with --name)" : ""}`,
  );
  return 0;
}

export interface WandbCommandOptions {
  api: string;
  run: string;
  token?: string;
  wandbBaseUrl: string;
  wandbApiKey: string;
  entity?: string;
  /** W&B offline: run directories under DIR/wandb, uploaded later by `wandb sync`. */
  offlineDir?: string;
  intervalS: number;
  once: boolean;
}

/** Syncs until Ctrl-C (or once), then finishes every env's W&B run. */
export async function runWandb(
  options: WandbCommandOptions,
  log: (line: string) => void = console.log,
): Promise<number> {
  const sync = new WandbSync({
    api: options.api,
    run: options.run,
    token: options.token,
    wandb: { baseUrl: options.wandbBaseUrl, apiKey: options.wandbApiKey, entity: options.entity },
    offlineDir: options.offlineDir,
  });
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    while (!options.once && !abort.signal.aborted) {
      const lines = await sync.sync();
      if (lines > 0) log(`logged ${lines} W&B history lines`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, options.intervalS * 1000);
        abort.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve(undefined);
        });
      });
    }
    await sync.finish();
    log(`W&B runs of ${options.run} finished`);
    for (const dir of sync.offlineRunDirs)
      log(`W&B offline run: ${dir} (upload it with: wandb sync ${dir})`);
    return 0;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
}
