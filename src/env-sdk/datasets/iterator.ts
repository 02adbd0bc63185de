/**
 * Walks a dataset in epochs, optionally in a fresh seeded order each epoch, with a cursor small
 * enough to live in an env checkpoint: `getNextItem()` is `iterator.next()`, and
 * `saveCheckpoint()`/`loadCheckpoint()` store and restore the cursor.
 *
 * Given a loader instead of rows, it loads on first use. In a Worker deployment only the feeder
 * calls getNextItem(), while setup() also runs in every rollout isolate next to a ~100 MB
 * tokenizer, so a lazily loaded dataset is never held where it is not needed.
 */
import { hashParts, SeededRng } from "../../core/codecs/rng";
import type { JsonValue } from "../base-env";
import { DatasetError } from "./source";

/** Everything the next row depends on. `size` lets a resume notice a dataset that changed. */
export type DatasetCursor = { epoch: number; index: number; seed: number; size: number };

export type DatasetIteratorOptions = {
  /** A new seeded order every epoch (default true); false walks rows in file order. */
  shuffle?: boolean;
  seed?: number;
  /** Passes over the data before next() returns null (default: endless). */
  epochs?: number;
};

export class DatasetIterator<Row> {
  readonly shuffle: boolean;
  readonly epochs: number;
  private loader: (() => Promise<readonly Row[]>) | null;
  private loading: Promise<readonly Row[]> | null = null;
  private rows: readonly Row[] | null = null;
  private seed: number;
  private epoch = 0;
  private index = 0;
  /** Size from a checkpoint loaded before the rows were. */
  private savedSize: number | null = null;
  private order: number[] | null = null;

  constructor(
    rows: readonly Row[] | (() => Promise<readonly Row[]>),
    options: DatasetIteratorOptions = {},
  ) {
    this.shuffle = options.shuffle ?? true;
    this.seed = options.seed ?? 0;
    this.epochs = options.epochs ?? Number.POSITIVE_INFINITY;
    if (typeof rows === "function") {
      this.loader = rows;
    } else {
      this.loader = null;
      this.setRows(rows);
    }
  }

  /** The rows (loading them on first call). */
  async load(): Promise<readonly Row[]> {
    if (this.rows) return this.rows;
    if (!this.loading) {
      const loader = this.loader!;
      this.loading = loader().then(
        (rows) => {
          this.setRows(rows);
          return rows;
        },
        (error: unknown) => {
          this.loading = null; // a failed load (network) may be retried by the next call
          throw error;
        },
      );
    }
    return this.loading;
  }

  private setRows(rows: readonly Row[]): void {
    if (rows.length === 0) throw new DatasetError("bad_option", "dataset has no rows to iterate");
    this.rows = rows;
    if (this.savedSize !== null && this.savedSize !== rows.length) this.index = 0;
    this.savedSize = null;
  }

  get cursor(): DatasetCursor {
    const size = this.rows?.length ?? this.savedSize ?? 0;
    return { epoch: this.epoch, index: this.index, seed: this.seed, size };
  }

  /** The next row, moving to the next epoch at the end of one; null once `epochs` are done. */
  async next(): Promise<Row | null> {
    const rows = this.rows ?? (await this.load());
    if (this.index >= rows.length) {
      this.epoch++;
      this.index = 0;
      this.order = null;
    }
    if (this.epoch >= this.epochs) return null;
    const position = this.index++;
    return rows[this.orderOf(position, rows.length)]!;
  }

  private orderOf(position: number, size: number): number {
    if (!this.shuffle) return position;
    if (!this.order) {
      const order = Array.from({ length: size }, (_, i) => i);
      this.order = new SeededRng(hashParts("dataset-epoch", this.seed, this.epoch)).shuffle(order);
    }
    return this.order[position]!;
  }

  /** The cursor, as JSON for an env checkpoint. */
  saveCheckpoint(): DatasetCursor {
    return this.cursor;
  }

  /**
   * Resumes at a saved cursor (its seed wins, so the resumed order is the saved one). Nothing
   * saved (undefined/null) starts from the beginning. If the dataset's size changed, the saved
   * position no longer names the same rows: the iterator keeps the epoch and restarts it.
   */
  loadCheckpoint(state: JsonValue | undefined): void {
    this.order = null;
    if (state === undefined || state === null) {
      this.epoch = 0;
      this.index = 0;
      return;
    }
    const cursor = state as Partial<Record<keyof DatasetCursor, unknown>>;
    for (const field of ["epoch", "index", "seed", "size"] as const) {
      const value = cursor[field];
      const ok = Number.isInteger(value) && (field === "seed" || (value as number) >= 0);
      if (!ok) {
        throw new DatasetError(
          "bad_option",
          `dataset checkpoint: "${field}" must be ${field === "seed" ? "an" : "a non-negative"} integer, got ${JSON.stringify(value)}`,
        );
      }
    }
    const saved = cursor as DatasetCursor;
    this.seed = saved.seed;
    this.epoch = saved.epoch;
    this.index = saved.index;
    if (this.rows) {
      if (saved.size !== this.rows.length) this.index = 0;
    } else {
      this.savedSize = saved.size;
    }
  }
}
