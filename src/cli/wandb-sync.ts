/**
 * Copies a run's metrics store to W&B the way Atropos lays runs out: project and group from the
 * trainer's /register (GET /wandb_info), one W&B run per env named `{wandb_name}-{date}-{rand6}`,
 * every key prefixed `{wandb_name}_` (e.g. `gsm8k_0_train/percent_correct`), logged at the
 * trainer step, and a `train/rollouts` table (`text`, `score`) of the env's latest rollouts.
 *
 * It reads the API only (GET /v1/runs/{run}/metrics, /stats, /groups), so it serves envs run by
 * `serve` and env workers alike, and is owned by a long-lived process (the CLI), never by a short
 * queue invocation. A step is logged once the trainer is `settleSteps` past it (env metrics and
 * evaluations of a step arrive after it ends); `finish` logs the rest.
 */
import type { MetricSeries } from "../core/wire/api-schemas";
import { HttpClient, parseJsonAnswer } from "../core/wire/http-client";
import { WandbRun, type WandbValue } from "./wandb-client";
import { OfflineWandbRun } from "./wandb-offline";

export interface WandbSyncOptions {
  api: string;
  run: string;
  token?: string;
  wandb: { baseUrl: string; apiKey: string; entity?: string | null };
  /** W&B offline (WANDB_MODE=offline): write run directories under DIR/wandb instead. */
  offlineDir?: string;
  /** Steps the trainer must be past a step before it is logged (default 2). */
  settleSteps?: number;
  /** Rows kept in `train/rollouts` (Atropos' num_rollouts_to_keep, default 32). */
  rolloutsToKeep?: number;
  fetch?: typeof fetch;
  now?: () => number;
  random?: () => number;
}

/** What WandbSync needs of a W&B run: online (WandbRun) or offline (OfflineWandbRun). */
type WandbSink = Pick<WandbRun, "id" | "start" | "log" | "table" | "flush" | "finish">;

interface EnvRun {
  wandb: WandbSink;
  prefix: string;
  /** Last step logged. */
  logged: number;
  lastGroupId: number;
  rollouts: [string, number][];
}

interface GroupDetail {
  payload: { tokens: number[][]; scores: number[]; messages?: { content: unknown }[][] | null };
  token_texts: string[][] | null;
}

/** Atropos' W&B run name: `{name}-{YYYY-MM-DD}-{6 random lowercase letters}`. */
export function atroposRunName(name: string, now: number, random: () => number): string {
  const date = new Date(now).toISOString().slice(0, 10);
  const letters = Array.from({ length: 6 }, () =>
    String.fromCharCode(97 + Math.floor(random() * 26)),
  ).join("");
  return `${name}-${date}-${letters}`;
}

/** Values per step, keyed `{prefix}_{name}`, steps ascending. */
export function valuesByStep(
  series: MetricSeries[],
  prefix: string,
): Map<number, Record<string, number>> {
  const steps = new Map<number, Record<string, number>>();
  for (const s of series) {
    s.steps.forEach((step, i) => {
      const values = steps.get(step) ?? {};
      values[`${prefix}_${s.name}`] = s.values[i]!;
      steps.set(step, values);
    });
  }
  return new Map([...steps.entries()].sort((a, b) => a[0] - b[0]));
}

/** The text of a rollout's first sequence: token texts, else its last message, else token ids. */
function rolloutText(group: GroupDetail): string {
  const texts = group.token_texts?.[0];
  if (texts) return texts.join("");
  const last = group.payload.messages?.[0]?.at(-1)?.content;
  if (typeof last === "string") return last;
  return (group.payload.tokens[0] ?? []).join(" ");
}

export class WandbSync {
  private readonly options: WandbSyncOptions;
  private readonly http: HttpClient;
  private readonly envs = new Map<number, EnvRun>();

  constructor(options: WandbSyncOptions) {
    this.options = options;
    this.http = new HttpClient({
      token: options.token,
      attempts: 3,
      baseDelayMs: 500,
      maxDelayMs: 5000,
      fetch: options.fetch,
    });
  }

  private async get<T>(path: string): Promise<T> {
    const url = `${this.options.api.replace(/\/+$/, "")}${path}`;
    return parseJsonAnswer<T>(await this.http.send("GET", url), path);
  }

  private get v1(): string {
    return `/v1/runs/${encodeURIComponent(this.options.run)}`;
  }

  /** Logs every step that has settled; returns the number of history lines logged. */
  async sync(final = false): Promise<number> {
    const run = this.options.run;
    const root = run === "default" ? "" : `/runs/${encodeURIComponent(run)}`;
    const info = await this.get<{ group: string | null; project: string | null }>(
      `${root}/wandb_info`,
    );
    if (info.project === null) return 0;
    const stats = await this.get<{ step: number; envs: { env_id: number; name: string }[] }>(
      `${this.v1}/stats`,
    );
    const lastStep = final
      ? Number.POSITIVE_INFINITY
      : stats.step - (this.options.settleSteps ?? 2);
    let lines = 0;
    for (const env of stats.envs) {
      const state = await this.envRun(env, info.project, info.group);
      if (lastStep <= state.logged) continue;
      const { series } = await this.get<{ series: MetricSeries[] }>(
        `${this.v1}/metrics?env=${env.env_id}&from_step=${state.logged + 1}`,
      );
      const steps = [...valuesByStep(series, state.prefix)].filter(([step]) => step <= lastStep);
      if (steps.length === 0) continue;
      for (const [step, values] of steps) {
        state.wandb.log(values, step);
        lines++;
      }
      const last = steps.at(-1)![0];
      const table = await this.rolloutsTable(env.env_id, state, last);
      if (table) {
        state.wandb.log({ [`${state.prefix}_train/rollouts`]: table }, last);
        lines++;
      }
      state.logged = last;
      await state.wandb.flush();
    }
    return lines;
  }

  private async envRun(
    env: { env_id: number; name: string },
    project: string,
    group: string | null,
  ): Promise<EnvRun> {
    const known = this.envs.get(env.env_id);
    if (known) return known;
    const now = (this.options.now ?? Date.now)();
    const random = this.options.random ?? Math.random;
    const name = atroposRunName(env.name, now, random);
    const runId = Array.from(
      { length: 8 },
      () => "abcdefghijklmnopqrstuvwxyz0123456789"[Math.floor(random() * 36)],
    ).join("");
    const common = {
      project,
      group,
      runId,
      displayName: name,
      config: { run: this.options.run, env_id: env.env_id, wandb_name: env.name },
      now: this.options.now,
    };
    const wandb: WandbSink =
      this.options.offlineDir !== undefined
        ? new OfflineWandbRun({ ...common, dir: this.options.offlineDir })
        : new WandbRun({ ...this.options.wandb, ...common, fetch: this.options.fetch });
    await wandb.start();
    const state: EnvRun = { wandb, prefix: env.name, logged: -1, lastGroupId: -1, rollouts: [] };
    this.envs.set(env.env_id, state);
    return state;
  }

  /** The env's newest rollouts since the last table (one row per group), or null if none. */
  private async rolloutsTable(
    envId: number,
    state: EnvRun,
    step: number,
  ): Promise<Record<string, WandbValue> | null> {
    const keep = this.options.rolloutsToKeep ?? 32;
    const { groups } = await this.get<{ groups: { id: number }[] }>(
      `${this.v1}/groups?env_id=${envId}&limit=${Math.min(keep, 50)}`,
    );
    const fresh = groups.filter((g) => g.id > state.lastGroupId).reverse();
    if (fresh.length === 0) return null;
    for (const g of fresh) {
      const detail = await this.get<GroupDetail>(`${this.v1}/groups/${g.id}`);
      state.rollouts.push([rolloutText(detail), detail.payload.scores[0] ?? 0]);
      state.lastGroupId = Math.max(state.lastGroupId, g.id);
    }
    state.rollouts = state.rollouts.slice(-keep);
    return state.wandb.table(
      `${state.prefix}_train/rollouts`,
      step,
      ["text", "score"],
      state.rollouts,
    ) as Promise<Record<string, WandbValue>>;
  }

  /** The offline run directories written so far (empty when online). */
  get offlineRunDirs(): string[] {
    return [...this.envs.values()].flatMap((e) =>
      e.wandb instanceof OfflineWandbRun ? [e.wandb.runDir] : [],
    );
  }

  /** Logs every remaining step and finishes each env's W&B run. */
  async finish(exitcode = 0): Promise<void> {
    await this.sync(true);
    for (const state of this.envs.values()) await state.wandb.finish(exitcode);
  }
}
