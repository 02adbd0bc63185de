/**
 * A small fetch-based client of the W&B run protocol, for what the JS SDK cannot do (a group,
 * tables): the UpsertBucket GraphQL mutation creates the run (with its group and config), the
 * run's file_stream carries history lines (with their offset) and the summary, CreateRunFiles
 * plus a PUT uploads a table's file, and a last file_stream call with `complete` finishes the run.
 */
import { createHash } from "node:crypto";

const UPSERT_BUCKET = `mutation UpsertBucket($id: String, $name: String, $project: String, $entity: String, $groupName: String, $description: String, $displayName: String, $notes: String, $commit: String, $config: JSONString, $host: String, $debug: Boolean, $program: String, $repo: String, $jobType: String, $state: String, $sweep: String, $tags: [String!], $summaryMetrics: JSONString) {
  upsertBucket(input: {id: $id, name: $name, groupName: $groupName, modelName: $project, entityName: $entity, description: $description, displayName: $displayName, notes: $notes, config: $config, commit: $commit, host: $host, debug: $debug, jobProgram: $program, jobRepo: $repo, jobType: $jobType, state: $state, sweep: $sweep, tags: $tags, summaryMetrics: $summaryMetrics}) {
    bucket { id name displayName description project { id name entity { id name } } historyLineCount }
    inserted
  }
}`;

const CREATE_RUN_FILES = `mutation CreateRunFiles($entity: String!, $project: String!, $run: String!, $files: [String!]!) {
  createRunFiles(input: {entityName: $entity, projectName: $project, runName: $run, files: $files}) {
    runID
    uploadHeaders
    files { name uploadUrl }
  }
}`;

export interface WandbRunOptions {
  /** W&B server, e.g. https://api.wandb.ai (WANDB_BASE_URL). */
  baseUrl: string;
  apiKey: string;
  /** Default: the API key's default entity, as the server answers. */
  entity?: string | null;
  project: string;
  group?: string | null;
  /** The run's id (URL slug). */
  runId: string;
  displayName: string;
  config?: Record<string, unknown>;
  fetch?: typeof fetch;
  now?: () => number;
}

export type WandbValue = number | string | boolean | null | Record<string, unknown>;

export class WandbError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "WandbError";
  }
}

/** `{key: {value}}` per top-level key, the form W&B stores run config in. */
/** One history line as W&B records it: the values plus its step and times (seconds). */
export function historyLine(
  values: Record<string, WandbValue>,
  step: number,
  now: number,
  startedAt: number,
): Record<string, unknown> {
  return { ...values, _step: step, _runtime: (now - startedAt) / 1000, _timestamp: now / 1000 };
}

/** A logged table as a run file: its path and content, and the history value that refers to it. */
export function tableFile(
  key: string,
  step: number,
  columns: string[],
  rows: unknown[][],
): { path: string; content: string; ref: Record<string, unknown> } {
  const content = JSON.stringify({ columns, data: rows });
  const sha256 = createHash("sha256").update(content).digest("hex");
  const path = `media/table/${key.replaceAll("/", "_")}_${step}_${sha256.slice(0, 20)}.table.json`;
  const ref = {
    _type: "table-file",
    path,
    sha256,
    size: Buffer.byteLength(content),
    ncols: columns.length,
    nrows: rows.length,
    log_mode: "IMMUTABLE",
  };
  return { path, content, ref };
}

export function wandbConfig(config: Record<string, unknown>): Record<string, { value: unknown }> {
  return Object.fromEntries(Object.entries(config).map(([k, value]) => [k, { value }]));
}

export class WandbRun {
  private readonly options: WandbRunOptions;
  private readonly fetch: typeof fetch;
  private readonly now: () => number;
  private entity: string | null;
  private readonly startedAt: number;
  /** History lines sent so far: the offset of the next one. */
  private historyOffset = 0;
  private pending: string[] = [];
  private uploaded: string[] = [];
  private readonly summary: Record<string, WandbValue> = {};

  constructor(options: WandbRunOptions) {
    this.options = options;
    this.fetch = options.fetch ?? fetch;
    this.now = options.now ?? Date.now;
    this.entity = options.entity ?? null;
    this.startedAt = this.now();
  }

  get id(): string {
    return this.options.runId;
  }

  private get auth(): string {
    return `Basic ${Buffer.from(`api:${this.options.apiKey}`).toString("base64")}`;
  }

  private url(path: string): string {
    return `${this.options.baseUrl.replace(/\/+$/, "")}${path}`;
  }

  private async post(path: string, body: unknown): Promise<unknown> {
    const res = await this.fetch(this.url(path), {
      method: "POST",
      headers: { authorization: this.auth, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) {
      throw new WandbError(`W&B ${path}: HTTP ${res.status}: ${text.slice(0, 300)}`, res.status);
    }
    return text ? JSON.parse(text) : {};
  }

  private async graphql<T>(query: string, variables: Record<string, unknown>): Promise<T> {
    const answer = (await this.post("/graphql", { query, variables })) as {
      data?: T;
      errors?: { message: string }[];
    };
    if (answer.errors?.length || !answer.data) {
      throw new WandbError(
        `W&B GraphQL: ${answer.errors?.map((e) => e.message).join("; ") ?? "no data"}`,
        200,
      );
    }
    return answer.data;
  }

  /** Creates (or updates) the run with its group and config. */
  async start(): Promise<void> {
    const data = await this.graphql<{
      upsertBucket: { bucket: { project: { name: string; entity: { name: string } } } };
    }>(UPSERT_BUCKET, {
      name: this.options.runId,
      project: this.options.project,
      entity: this.entity,
      groupName: this.options.group ?? null,
      displayName: this.options.displayName,
      config: JSON.stringify(wandbConfig(this.options.config ?? {})),
    });
    this.entity = data.upsertBucket.bucket.project.entity.name;
  }

  /** Queues one history line at `step` (sent by the next flush). */
  log(values: Record<string, WandbValue>, step: number): void {
    this.pending.push(JSON.stringify(historyLine(values, step, this.now(), this.startedAt)));
    Object.assign(this.summary, values, { _step: step });
  }

  /**
   * Uploads a table as a run file and returns the history value that refers to it (log it under
   * its key at the same step).
   */
  async table(
    key: string,
    step: number,
    columns: string[],
    rows: unknown[][],
  ): Promise<Record<string, unknown>> {
    const { path, content, ref } = tableFile(key, step, columns, rows);
    const data = await this.graphql<{
      createRunFiles: {
        uploadHeaders: string[] | null;
        files: { name: string; uploadUrl: string | null }[];
      };
    }>(CREATE_RUN_FILES, {
      entity: this.requireEntity(),
      project: this.options.project,
      run: this.options.runId,
      files: [path],
    });
    const target = data.createRunFiles.files.find((f) => f.name === path);
    if (!target?.uploadUrl) throw new WandbError(`W&B gave no upload URL for ${path}`, 200);
    const headers: Record<string, string> = { "content-type": "application/json" };
    for (const h of data.createRunFiles.uploadHeaders ?? []) {
      const at = h.indexOf(":");
      if (at > 0) headers[h.slice(0, at).trim()] = h.slice(at + 1).trim();
    }
    const put = await this.fetch(target.uploadUrl, { method: "PUT", headers, body: content });
    if (!put.ok) throw new WandbError(`W&B upload of ${path}: HTTP ${put.status}`, put.status);
    this.uploaded.push(path);
    return ref;
  }

  private requireEntity(): string {
    if (this.entity === null) throw new Error("W&B run not started: call start() first");
    return this.entity;
  }

  private streamPath(): string {
    const e = encodeURIComponent(this.requireEntity());
    const p = encodeURIComponent(this.options.project);
    return `/files/${e}/${p}/${encodeURIComponent(this.options.runId)}/file_stream`;
  }

  /** Sends queued history lines (at their offset) and the summary. */
  async flush(extra: Record<string, unknown> = {}): Promise<void> {
    const lines = this.pending;
    const files: Record<string, { offset: number; content: string[] }> = {};
    if (lines.length > 0) {
      files["wandb-history.jsonl"] = { offset: this.historyOffset, content: lines };
      files["wandb-summary.json"] = { offset: 0, content: [JSON.stringify(this.summary)] };
    }
    const uploaded = this.uploaded;
    if (lines.length === 0 && uploaded.length === 0 && Object.keys(extra).length === 0) return;
    await this.post(this.streamPath(), {
      files,
      ...(uploaded.length > 0 ? { uploaded } : {}),
      ...extra,
    });
    this.pending = [];
    this.uploaded = [];
    this.historyOffset += lines.length;
  }

  /** Flushes and marks the run finished. */
  async finish(exitcode = 0): Promise<void> {
    await this.flush();
    await this.post(this.streamPath(), { complete: true, exitcode });
  }
}
