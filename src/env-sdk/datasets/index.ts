/**
 * Datasets for envs: `loadDataset(source, options)` reads JSONL (optionally gzipped) or Parquet
 * from a local path (Node), an http(s) URL or an R2 object into JSON rows, and `DatasetIterator`
 * hands them out in checkpointable epochs. Web-standard APIs only, so the same env code runs in
 * the CLI and in a Worker (128 MB isolate: keep datasets to tens of MB, use `columns` and `limit`).
 * Guide: docs/DATASETS.md.
 */
import { hashParts, SeededRng } from "../../core/codecs/rng";
import type { JsonObject } from "../base-env";
import { readJsonl } from "./jsonl";
import { readParquet } from "./parquet";
import {
  DatasetError,
  type DatasetFormat,
  type DatasetSource,
  describeSource,
  detectFormat,
  openRandomAccess,
  openStream,
} from "./source";

export { type DatasetCursor, DatasetIterator, type DatasetIteratorOptions } from "./iterator";
export { parquetValueToJson, SUPPORTED_PARQUET_CODECS } from "./parquet";
export {
  type DatasetBucket,
  DatasetError,
  type DatasetErrorCode,
  type DatasetFormat,
  type DatasetSource,
  detectFormat,
  type R2DatasetSource,
} from "./source";

/** Default cap on bytes read (decompressed JSONL, or a parquet file fetched whole from a URL). */
export const DEFAULT_DATASET_MAX_BYTES = 64 * 1024 * 1024;

export type LoadDatasetOptions = {
  /** "jsonl" or "parquet"; default from the name (.jsonl, .ndjson, .jsonl.gz, .parquet). */
  format?: DatasetFormat;
  /** Columns to keep: a list, or `{ source: output }` to keep and rename. Default: all. */
  columns?: readonly string[] | Readonly<Record<string, string>>;
  /** Keep only rows whose `splitColumn` equals this (e.g. "train"). */
  split?: string;
  /** Column holding the split name (default "split"). */
  splitColumn?: string;
  /** Stop after this many (kept) rows; the rest of the file is not read. */
  limit?: number;
  /** Shuffle the loaded rows with `seed` (default 0); same seed, same order. */
  shuffle?: boolean;
  seed?: number;
  /** Fail rather than read more than this many bytes (default 64 MiB). */
  maxBytes?: number;
};

function checkCount(name: string, value: number | undefined, min: number): void {
  if (value !== undefined && !(Number.isInteger(value) && value >= min)) {
    throw new DatasetError("bad_option", `${name} must be an integer ≥ ${min}, got ${value}`);
  }
}

/** [source column, output name] pairs, or null for every column as is. */
function columnPairs(columns: LoadDatasetOptions["columns"]): [string, string][] | null {
  if (columns === undefined) return null;
  const pairs: [string, string][] = Array.isArray(columns)
    ? columns.map((name) => [name, name])
    : Object.entries(columns);
  if (pairs.length === 0)
    throw new DatasetError("bad_option", "columns must name at least one column");
  return pairs;
}

/**
 * Reads a dataset into JSON rows. Order of operations: split filter, column selection, limit
 * (reading stops there), then the seeded shuffle of the rows read.
 */
export async function loadDataset(
  source: DatasetSource,
  options: LoadDatasetOptions = {},
): Promise<JsonObject[]> {
  checkCount("limit", options.limit, 0);
  checkCount("maxBytes", options.maxBytes, 1);
  if (options.seed !== undefined && !Number.isInteger(options.seed)) {
    throw new DatasetError("bad_option", `seed must be an integer, got ${options.seed}`);
  }
  const format = options.format ?? detectFormat(source);
  const label = describeSource(source);
  const pairs = columnPairs(options.columns);
  const splitColumn = options.splitColumn ?? "split";
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const maxBytes = options.maxBytes ?? DEFAULT_DATASET_MAX_BYTES;
  const rows: JsonObject[] = [];
  if (limit === 0) return rows;

  /** Keeps (or skips) one row; false once `limit` rows are kept. `where` names it in errors. */
  const keep = (row: JsonObject, where: string): boolean => {
    if (options.split !== undefined && row[splitColumn] !== options.split) return true;
    if (!pairs) {
      rows.push(row);
    } else {
      const out: JsonObject = {};
      for (const [from, to] of pairs) {
        const value = row[from];
        if (value === undefined) {
          throw new DatasetError("missing_column", `${label}: ${where} has no column "${from}"`);
        }
        out[to] = value;
      }
      rows.push(out);
    }
    return rows.length < limit;
  };

  if (format === "jsonl") {
    await readJsonl(await openStream(source), {
      label,
      maxBytes,
      onRow: (row, line) => keep(row, `line ${line}`),
    });
  } else if (format === "parquet") {
    const wanted = pairs ? pairs.map(([from]) => from) : null;
    if (wanted && options.split !== undefined && !wanted.includes(splitColumn)) {
      wanted.push(splitColumn);
    }
    const { file, close } = await openRandomAccess(source, maxBytes);
    try {
      await readParquet(file, {
        label,
        columns: wanted,
        onRow: (row, index) => keep(row, `row ${index}`),
      });
    } finally {
      await close();
    }
  } else {
    throw new DatasetError("bad_option", `format must be "jsonl" or "parquet", got ${format}`);
  }

  if (options.shuffle) {
    new SeededRng(hashParts("dataset-shuffle", options.seed ?? 0)).shuffle(rows);
  }
  return rows;
}
