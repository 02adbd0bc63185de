/**
 * loadDataset inside workerd, from the local R2 binding: JSONL (plain and gzipped) and parquet
 * read by byte range, so env code that loads data in a Worker is known to run there.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { DatasetError, DatasetIterator, loadDataset } from "../../src/env-sdk/datasets";
import { problems, toJsonl, toParquet, zstdStored } from "../fixtures/datasets";
import { gzip, uniqueRun } from "./helpers";

const bucket = (env as unknown as Bindings).PAYLOADS;
const ROWS = problems(30);

describe("loadDataset in a Worker", () => {
  it("reads JSONL, gzipped JSONL and parquet objects from R2", async () => {
    const prefix = `datasets/${uniqueRun("ds")}`;
    await bucket.put(`${prefix}/train.jsonl`, toJsonl(ROWS));
    await bucket.put(`${prefix}/train.jsonl.gz`, await gzip(toJsonl(ROWS)));
    await bucket.put(`${prefix}/train.parquet`, toParquet(ROWS, { rowGroupSize: 8 }));
    await bucket.put(
      `${prefix}/zstd.parquet`,
      toParquet(ROWS, { codec: "ZSTD", compressors: { ZSTD: zstdStored } }),
    );

    expect(await loadDataset({ bucket, key: `${prefix}/train.jsonl` })).toEqual(ROWS);
    expect(await loadDataset({ bucket, key: `${prefix}/train.jsonl.gz` })).toEqual(ROWS);
    expect(await loadDataset({ bucket, key: `${prefix}/train.parquet` })).toEqual(ROWS);
    expect(await loadDataset({ bucket, key: `${prefix}/zstd.parquet` })).toEqual(ROWS);
    expect(
      await loadDataset(
        { bucket, key: `${prefix}/train.parquet` },
        { columns: { question: "prompt" }, split: "test", limit: 3 },
      ),
    ).toEqual(
      ROWS.filter((r) => r.split === "test")
        .slice(0, 3)
        .map((r) => ({ prompt: r.question })),
    );

    const load = () => loadDataset({ bucket, key: `${prefix}/train.parquet` }, { limit: 5 });
    const iterator = new DatasetIterator(load, { seed: 1 });
    await iterator.next();
    const resumed = new DatasetIterator(load);
    resumed.loadCheckpoint(iterator.saveCheckpoint());
    expect(await resumed.next()).toEqual(await iterator.next());
  });

  it("reports a missing object and a non-parquet object clearly", async () => {
    const key = `datasets/${uniqueRun("ds")}/absent.parquet`;
    await expect(loadDataset({ bucket, key })).rejects.toThrow(`dataset not found: r2://${key}`);
    const textKey = `datasets/${uniqueRun("ds")}/text.parquet`;
    await bucket.put(textKey, "plain text, certainly not parquet");
    const error = await loadDataset({ bucket, key: textKey }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatasetError);
    expect((error as DatasetError).code).toBe("not_parquet");
  });
});
