/**
 * Parquet rows through hyparquet (pure JS, runs in Workers and Node). Codecs: UNCOMPRESSED and
 * SNAPPY (hyparquet), GZIP (the project's bounded gunzip) and ZSTD (fzstd, ~25 KB). BROTLI and
 * LZ4 are refused up front with a message, rather than bundling their decoders.
 */
import { decompress as zstdDecompress } from "fzstd";
import {
  type CompressionCodec,
  type Compressors,
  type FileMetaData,
  parquetMetadataAsync,
  parquetReadObjects,
  parquetSchema,
} from "hyparquet";
import { gunzipBounded } from "../../core/codecs/gzip";
import type { JsonObject, JsonValue } from "../base-env";
import { DatasetError, type RandomAccess } from "./source";

export const SUPPORTED_PARQUET_CODECS: readonly CompressionCodec[] = [
  "UNCOMPRESSED",
  "SNAPPY",
  "GZIP",
  "ZSTD",
];

const COMPRESSORS: Compressors = {
  GZIP: (input, outputLength) => gunzipBounded(input, outputLength),
  ZSTD: (input, outputLength) => zstdDecompress(input, new Uint8Array(outputLength)),
};

const MAGIC = "PAR1";

function isMagic(buffer: ArrayBuffer): boolean {
  return new TextDecoder().decode(buffer) === MAGIC;
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/**
 * A parquet value as JSON: INT64 as a number when exact (else a decimal string), timestamps as
 * ISO strings, binary as base64, NaN/±Infinity as null (JSON has no spelling for them).
 */
export function parquetValueToJson(value: unknown): JsonValue {
  if (value === undefined || value === null) return null;
  if (typeof value === "bigint") {
    return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return null;
    return Object.is(value, -0) ? 0 : value;
  }
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return base64(value);
  if (Array.isArray(value) || ArrayBuffer.isView(value)) {
    return Array.from(value as ArrayLike<unknown>, parquetValueToJson);
  }
  if (typeof value === "object") {
    const out: JsonObject = {};
    for (const [key, inner] of Object.entries(value)) {
      if (inner !== undefined) out[key] = parquetValueToJson(inner);
    }
    return out;
  }
  return String(value);
}

/** Top-level column names of the file. */
export function parquetColumns(metadata: FileMetaData): string[] {
  return parquetSchema(metadata).children.map((child) => child.element.name);
}

/** Opens the file's metadata, failing clearly for something that is not parquet. */
export async function readParquetMetadata(
  file: RandomAccess,
  label: string,
): Promise<FileMetaData> {
  const notParquet = (why: string) =>
    new DatasetError("not_parquet", `${label} is not a parquet file (${why})`);
  if (file.byteLength < 12) throw notParquet("too short");
  const [head, tail] = await Promise.all([
    file.slice(0, 4),
    file.slice(file.byteLength - 4, file.byteLength),
  ]);
  if (!isMagic(head) || !isMagic(tail)) throw notParquet("no PAR1 magic bytes");
  try {
    return await parquetMetadataAsync(file);
  } catch (error) {
    throw notParquet(`unreadable footer: ${(error as Error).message}`);
  }
}

/** Refuses columns compressed with a codec this build cannot decode, naming column and codec. */
function checkCodecs(metadata: FileMetaData, columns: readonly string[] | null, label: string) {
  for (const rowGroup of metadata.row_groups) {
    for (const chunk of rowGroup.columns) {
      const meta = chunk.meta_data;
      if (!meta || SUPPORTED_PARQUET_CODECS.includes(meta.codec)) continue;
      const column = meta.path_in_schema[0] ?? "?";
      if (columns && !columns.includes(column)) continue;
      throw new DatasetError(
        "unsupported_codec",
        `${label}: column "${column}" uses the ${meta.codec} codec; supported: ${SUPPORTED_PARQUET_CODECS.join(", ")}. ` +
          `Rewrite the file with snappy or zstd (pyarrow: pq.write_table(table, path, compression="zstd"))`,
      );
    }
  }
}

export type ParquetReadOptions = {
  label: string;
  /** Top-level columns to read (null: all). */
  columns: readonly string[] | null;
  /** Called for each row (0-based row number); return false to stop reading. */
  onRow(row: JsonObject, index: number): boolean;
};

/** Reads rows one row group at a time, so a stop (limit) skips the remaining row groups. */
export async function readParquet(
  file: RandomAccess,
  { label, columns, onRow }: ParquetReadOptions,
): Promise<void> {
  const metadata = await readParquetMetadata(file, label);
  if (columns) {
    const available = parquetColumns(metadata);
    const missing = columns.filter((name) => !available.includes(name));
    if (missing.length > 0) {
      throw new DatasetError(
        "missing_column",
        `${label}: no column ${missing.map((m) => `"${m}"`).join(", ")}; columns: ${available.join(", ")}`,
      );
    }
  }
  checkCodecs(metadata, columns, label);
  let rowStart = 0;
  for (const rowGroup of metadata.row_groups) {
    const rowEnd = rowStart + Number(rowGroup.num_rows);
    const rows = await parquetReadObjects({
      file,
      metadata,
      columns: columns ? [...columns] : undefined,
      rowStart,
      rowEnd,
      compressors: COMPRESSORS,
    });
    for (const [i, row] of rows.entries()) {
      if (!onRow(parquetValueToJson(row) as JsonObject, rowStart + i)) return;
    }
    rowStart = rowEnd;
  }
}
