/**
 * `atropos-edge import FILE --run RUN [--into queue|replay]`: loads a groups JSONL file (what
 * `process` writes, or Atropos' saved groups: one ScoredData object per line) into a run's queue
 * or its replay buffer. Every line is validated before anything is sent; the file goes in chunks
 * whose Idempotency-Key names the file's SHA-256 and the chunk's lines, so importing the same file
 * again (or resuming after a failure) stores each line once.
 */
import type { Command } from "commander";
import { sha256Hex } from "../core/codecs/sha256";
import { errorMessage } from "../core/errors";
import { type HttpAnswer, HttpClient } from "../core/wire/http-client";
import { type ScoredDataInput, scoredDataSchema } from "../core/wire/schemas";
import { summarizeDetails, toValidationDetails } from "../core/wire/validation";
import { apiBasePath } from "../env-sdk/runtime/api-client";
import { type ConnectionOptions, connectionFrom, withConnectionOptions } from "./run-control";

export type ImportTarget = "queue" | "replay";

export interface ImportOptions {
  run: string;
  into?: string;
  /** Stamp this env_id on every group (queue only); default none. */
  envId?: string;
}

export interface ImportProgress {
  linesDone: number;
  lines: number;
  stored: number;
  duplicates: number;
}

export interface ImportSummary extends ImportProgress {
  sha256: string;
  into: ImportTarget;
  keptForReplay: number | null;
}

/** Lines per request; fixed, so that the same file always gets the same chunk keys. */
export const IMPORT_CHUNK_LINES = 64;
/** A chunk is cut earlier when its JSON would pass this many bytes. */
export const IMPORT_CHUNK_BYTES = 4 * 1024 * 1024;

interface Line {
  number: number;
  group: ScoredDataInput;
  bytes: number;
}

/** Parses and validates every non-empty line; throws naming the bad lines (at most 10). */
export function parseGroupsJsonl(text: string): Line[] {
  const lines: Line[] = [];
  const problems: string[] = [];
  const rows = text.split("\n");
  for (const [i, raw] of rows.entries()) {
    const line = raw.trim();
    if (line === "") continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      problems.push(`line ${i + 1}: not JSON (${errorMessage(err)})`);
      continue;
    }
    const parsed = scoredDataSchema.safeParse(json);
    if (!parsed.success) {
      problems.push(`line ${i + 1}: ${summarizeDetails(toValidationDetails(parsed.error, json))}`);
      continue;
    }
    lines.push({ number: i + 1, group: parsed.data, bytes: line.length });
  }
  if (problems.length > 0) {
    const shown = problems.slice(0, 10).join("\n");
    const more = problems.length > 10 ? `\n… and ${problems.length - 10} more` : "";
    throw new Error(`nothing imported: ${problems.length} invalid line(s)\n${shown}${more}`);
  }
  return lines;
}

/** Deterministic chunks: IMPORT_CHUNK_LINES lines, cut earlier at IMPORT_CHUNK_BYTES. */
export function chunkLines(lines: readonly Line[]): Line[][] {
  const chunks: Line[][] = [];
  let current: Line[] = [];
  let bytes = 0;
  for (const line of lines) {
    if (
      current.length > 0 &&
      (current.length >= IMPORT_CHUNK_LINES || bytes + line.bytes > IMPORT_CHUNK_BYTES)
    ) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(line);
    bytes += line.bytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

function answerJson(res: HttpAnswer, what: string): Record<string, unknown> {
  if (res.status >= 400) {
    let message = res.text.slice(0, 500);
    try {
      const body = JSON.parse(res.text) as { error?: { message?: string } };
      message = body.error?.message ?? message;
    } catch {
      // not JSON: keep the text
    }
    throw new Error(`${what}: HTTP ${res.status}: ${message}`);
  }
  return JSON.parse(res.text) as Record<string, unknown>;
}

export async function importGroupsJsonl(
  connection: ConnectionOptions,
  text: string,
  options: ImportOptions,
  onProgress: (p: ImportProgress) => void = () => {},
): Promise<ImportSummary> {
  const into = (options.into ?? "queue") as ImportTarget;
  if (into !== "queue" && into !== "replay") {
    throw new Error(`--into must be queue or replay (got '${options.into}')`);
  }
  let envId: number | null = null;
  if (options.envId !== undefined) {
    envId = Number(options.envId);
    if (!Number.isInteger(envId) || envId < 0) {
      throw new Error(`--env-id must be a non-negative integer (got '${options.envId}')`);
    }
    if (into === "replay") throw new Error("--env-id applies to --into queue only");
  }
  const lines = parseGroupsJsonl(text);
  const sha256 = sha256Hex(text);
  const http = new HttpClient({
    token: connection.token,
    fetch: connection.fetch,
    attempts: 5,
    baseDelayMs: 500,
    maxDelayMs: 10_000,
  });
  const url =
    into === "queue"
      ? `${apiBasePath(connection.api, options.run)}/scored_data_list`
      : `${connection.api.replace(/\/+$/, "")}/v1/runs/${encodeURIComponent(options.run)}/replay/groups`;
  const progress: ImportProgress = { linesDone: 0, lines: lines.length, stored: 0, duplicates: 0 };
  let kept = 0;
  for (const chunk of chunkLines(lines)) {
    const first = chunk[0]!.number;
    const last = chunk.at(-1)!.number;
    const key = `import-${sha256.slice(0, 40)}-${into}-${first}-${last}`;
    const groups = chunk.map((l) => ({ ...l.group, env_id: envId }));
    const res = await http.send("POST", url, { json: groups, headers: { "Idempotency-Key": key } });
    const body = answerJson(res, `lines ${first}-${last}`);
    if (res.headers.get("idempotent-replayed") === "true") {
      // This chunk was imported before: every group of it is already stored.
      progress.duplicates += chunk.length;
    } else {
      const stored = Number(body.groups_processed ?? 0);
      progress.stored += stored;
      progress.duplicates += Number(body.duplicates ?? chunk.length - stored);
      kept += Number(body.kept_for_replay ?? 0);
    }
    progress.linesDone += chunk.length;
    onProgress({ ...progress });
  }
  return { ...progress, sha256, into, keptForReplay: into === "replay" ? kept : null };
}

export function formatImport(s: ImportSummary): string {
  const kept = s.keptForReplay === null ? "" : `, ${s.keptForReplay} kept in the replay buffer`;
  return `imported ${s.lines} group(s) into the ${s.into}: ${s.stored} stored, ${s.duplicates} already there${kept} (file sha256 ${s.sha256})`;
}

export function registerImportCommand(program: Command): void {
  withConnectionOptions(
    program
      .command("import")
      .description("load a groups JSONL file (process output, Atropos saved groups) into a run")
      .argument("<file>", "JSONL, one group per line")
      .requiredOption("--run <run>", "the run")
      .option(
        "--into <where>",
        "queue (delivered once, online) or replay (the replay buffer)",
        "queue",
      )
      .option("--env-id <n>", "stamp this env_id on the groups (queue only)"),
    "an API",
  ).action(async (file: string, o: ImportOptions & { api?: string; token?: string }) => {
    const { readFile } = await import("node:fs/promises");
    const text = await readFile(file, "utf8");
    const summary = await importGroupsJsonl(connectionFrom(o), text, o, (p) => {
      process.stderr.write(
        `\r${p.linesDone}/${p.lines} lines sent (${p.stored} stored, ${p.duplicates} already there)`,
      );
    });
    process.stderr.write("\n");
    console.log(formatImport(summary));
  });
}
