/**
 * W&B offline mode (`WANDB_MODE=offline`): the run is written to a run directory, as the wandb
 * SDK writes one offline, and `wandb sync DIR` uploads it later. The directory is
 * `WANDB_DIR/wandb/offline-run-YYYYMMDD_HHMMSS-ID/` with `run-ID.wandb` (the run's records) and
 * `files/` (tables). The `.wandb` file is wandb's datastore: the header `:W&B`, magic 0xBEE1,
 * version 0, then a LevelDB-style log (32 KiB blocks; each chunk: CRC-32 of type byte + data,
 * length, type FULL/FIRST/MIDDLE/LAST) of protobuf `Record`s (wandb_internal.proto). Only the
 * records a sync needs are written: header, run (with group and config), history, summary,
 * files and exit. Field numbers below are those of wandb_internal.proto.
 */

import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { historyLine, tableFile, type WandbValue, wandbConfig } from "./wandb-client";

const BLOCK = 32768;
const CHUNK_HEADER = 7;
const FULL = 1;
const FIRST = 2;
const MIDDLE = 3;
const LAST = 4;

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32 (IEEE, as zlib.crc32) of `bytes`, continuing from `crc`. */
export function crc32(bytes: Uint8Array, crc = 0): number {
  let c = ~crc >>> 0;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

// Protobuf wire encoding, just what the records need.
type Field = Uint8Array;

function varint(value: number | bigint): number[] {
  let v = BigInt(value);
  if (v < 0n) v += 1n << 64n;
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return out;
}

const concat = (parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));
const tag = (field: number, wire: number) => varint((field << 3) | wire);
const int = (field: number, value: number | bigint): Field =>
  Uint8Array.from([...tag(field, 0), ...varint(value)]);
const bytesField = (field: number, bytes: Uint8Array): Field =>
  Uint8Array.from([...tag(field, 2), ...varint(bytes.length), ...bytes]);
const str = (field: number, value: string): Field =>
  bytesField(field, new TextEncoder().encode(value));
const msg = (field: number, parts: Field[]): Field => bytesField(field, concat(parts));

/** A key-value item (ConfigItem, HistoryItem, SummaryItem: key 1, value_json 16). */
const item = (field: number, key: string, value: unknown): Field =>
  msg(field, [str(1, key), str(16, JSON.stringify(value))]);

const timestamp = (field: number, ms: number): Field =>
  msg(field, [int(1, Math.floor(ms / 1000)), int(2, Math.round((ms % 1000) * 1e6))]);

/** The datastore: header, then records in LevelDB log chunks. */
export class WandbDatastore {
  private offset = 0;

  constructor(private readonly path: string) {
    const header = new Uint8Array(7);
    header.set(new TextEncoder().encode(":W&B"));
    header[4] = 0xe1;
    header[5] = 0xbe;
    header[6] = 0;
    writeFileSync(path, header);
    this.offset = header.length;
  }

  write(record: Uint8Array): void {
    const out: number[] = [];
    let rest = record;
    let first = true;
    for (;;) {
      const left = BLOCK - (this.offset % BLOCK);
      if (left < CHUNK_HEADER) {
        out.push(...new Array(left).fill(0));
        this.offset += left;
        continue;
      }
      const room = left - CHUNK_HEADER;
      const chunk = rest.subarray(0, room);
      const last = chunk.length === rest.length;
      const type = first ? (last ? FULL : FIRST) : last ? LAST : MIDDLE;
      const crc = crc32(chunk, crc32(Uint8Array.of(type)));
      out.push(crc & 0xff, (crc >>> 8) & 0xff, (crc >>> 16) & 0xff, crc >>> 24);
      out.push(chunk.length & 0xff, chunk.length >>> 8, type, ...chunk);
      this.offset += CHUNK_HEADER + chunk.length;
      rest = rest.subarray(chunk.length);
      first = false;
      if (last) break;
    }
    appendFileSync(this.path, Uint8Array.from(out));
  }
}

export interface OfflineRunOptions {
  /** Where `wandb/` goes (WANDB_DIR, default the current directory). */
  dir: string;
  project: string;
  entity?: string | null;
  group?: string | null;
  runId: string;
  displayName: string;
  config?: Record<string, unknown>;
  now?: () => number;
}

const pad = (n: number) => String(n).padStart(2, "0");

/** The same calls as WandbRun (src/cli/wandb-client.ts), written to an offline run directory. */
export class OfflineWandbRun {
  readonly runDir: string;
  private readonly store: WandbDatastore;
  private readonly now: () => number;
  private readonly startedAt: number;
  private num = 0;
  private readonly summary: Record<string, WandbValue> = {};

  constructor(private readonly options: OfflineRunOptions) {
    this.now = options.now ?? Date.now;
    this.startedAt = this.now();
    const d = new Date(this.startedAt);
    const stamp = `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}_${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`;
    this.runDir = join(options.dir, "wandb", `offline-run-${stamp}-${options.runId}`);
    mkdirSync(join(this.runDir, "files"), { recursive: true });
    this.store = new WandbDatastore(join(this.runDir, `run-${options.runId}.wandb`));
  }

  get id(): string {
    return this.options.runId;
  }

  private record(body: Field): void {
    this.store.write(concat([int(1, ++this.num), body]));
  }

  /** The header and the run record (its project, group and config). */
  async start(): Promise<void> {
    this.record(msg(21, [msg(1, [str(1, "atropos-edge"), str(2, "0.0.0")])]));
    const o = this.options;
    const config = Object.entries(wandbConfig(o.config ?? {})).map(([k, v]) => item(1, k, v.value));
    this.record(
      msg(17, [
        str(1, o.runId),
        ...(o.entity ? [str(2, o.entity)] : []),
        str(3, o.project),
        msg(4, config),
        ...(o.group ? [str(6, o.group)] : []),
        str(8, o.displayName),
        timestamp(17, this.startedAt),
      ]),
    );
  }

  /** One history record at `step` (written now; flush has nothing left to send). */
  log(values: Record<string, WandbValue>, step: number): void {
    const line = historyLine(values, step, this.now(), this.startedAt);
    const items = Object.entries(line).map(([k, v]) => item(1, k, v));
    this.record(msg(2, [...items, msg(2, step > 0 ? [int(1, step)] : [])]));
    Object.assign(this.summary, values, { _step: step });
  }

  /** The table as a run file (uploaded by `wandb sync`) and the history value that refers to it. */
  async table(
    key: string,
    step: number,
    columns: string[],
    rows: unknown[][],
  ): Promise<Record<string, unknown>> {
    const { path, content, ref } = tableFile(key, step, columns, rows);
    mkdirSync(join(this.runDir, "files", "media", "table"), { recursive: true });
    writeFileSync(join(this.runDir, "files", path), content);
    // FilesRecord: files: [{path, policy NOW}].
    this.record(msg(6, [msg(1, [str(1, path), int(2, 0)])]));
    return ref;
  }

  /** The summary so far. */
  async flush(): Promise<void> {
    const updates = Object.entries(this.summary).map(([k, v]) => item(1, k, v));
    if (updates.length > 0) this.record(msg(3, updates));
  }

  /** The summary and the exit record. */
  async finish(exitcode = 0): Promise<void> {
    await this.flush();
    const runtime = Math.round((this.now() - this.startedAt) / 1000);
    this.record(msg(18, [int(1, exitcode), int(2, runtime)]));
  }
}
