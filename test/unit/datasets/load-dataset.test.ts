/**
 * loadDataset from local files and from a real HTTP server on 127.0.0.1: JSONL, gzipped JSONL and
 * parquet in each codec, the options (columns, split, limit, shuffle) and every error it promises.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { brotliCompressSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DatasetError,
  type DatasetErrorCode,
  loadDataset,
  parquetValueToJson,
} from "../../../src/env-sdk/datasets";
import { problems, toJsonl, toParquet, zstdStored } from "../../fixtures/datasets";

const ROWS = problems(20);
let dir: string;
let server: Server;
let baseUrl: string;

function path(name: string): string {
  return join(dir, name);
}

async function rejection(promise: Promise<unknown>, code: DatasetErrorCode): Promise<string> {
  const error = await promise.then(
    () => {
      throw new Error("expected a DatasetError");
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DatasetError);
  expect((error as DatasetError).code).toBe(code);
  return (error as DatasetError).message;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "datasets-"));
  const jsonl = toJsonl(ROWS);
  const files: Record<string, string | Uint8Array> = {
    "data.jsonl": jsonl,
    "data.jsonl.gz": gzipSync(jsonl),
    "data.parquet": toParquet(ROWS, { rowGroupSize: 8 }),
    "plain.parquet": toParquet(ROWS, { codec: "UNCOMPRESSED" }),
    "gzip.parquet": toParquet(ROWS, { codec: "GZIP", compressors: { GZIP: (b) => gzipSync(b) } }),
    "zstd.parquet": toParquet(ROWS, { codec: "ZSTD", compressors: { ZSTD: zstdStored } }),
    "brotli.parquet": toParquet(ROWS, {
      codec: "BROTLI",
      compressors: { BROTLI: (b) => brotliCompressSync(b) },
    }),
    "bad.jsonl": '{"a":1}\n\n{"a":2}\n{"a":3,}\n{"a":4}\n',
    "array.jsonl": '{"a":1}\n[1,2]\n',
    "crlf.ndjson": '{"a":1}\r\n{"a":2}\r\n',
    "no-newline.jsonl": '{"a":1}\n{"a":2}',
    "text.parquet": "this is not parquet, only text long enough",
    "corrupt.jsonl.gz": gzipSync(jsonl).subarray(0, 40),
    "data.txt": jsonl,
  };
  for (const [name, content] of Object.entries(files)) await writeFile(path(name), content);
  await mkdir(path("folder.jsonl"));

  server = createServer(async (req, res) => {
    const name = new URL(req.url ?? "/", "http://x").pathname.slice(1);
    try {
      const body = await readFile(path(name));
      res.writeHead(200, { "content-length": body.byteLength });
      res.end(body);
    } catch {
      res.writeHead(404).end("no such file");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

describe("loadDataset from local files", () => {
  it("reads JSONL, gzipped JSONL and CRLF / unterminated last lines", async () => {
    expect(await loadDataset(path("data.jsonl"))).toEqual(ROWS);
    expect(await loadDataset(path("data.jsonl.gz"))).toEqual(ROWS);
    expect(await loadDataset(path("crlf.ndjson"))).toEqual([{ a: 1 }, { a: 2 }]);
    expect(await loadDataset(path("no-newline.jsonl"))).toEqual([{ a: 1 }, { a: 2 }]);
    expect(await loadDataset(path("data.txt"), { format: "jsonl" })).toEqual(ROWS);
  });

  it("reads parquet across row groups in every supported codec", async () => {
    for (const name of ["data.parquet", "plain.parquet", "gzip.parquet", "zstd.parquet"]) {
      expect(await loadDataset(path(name)), name).toEqual(ROWS);
    }
  });

  it("selects and renames columns, filters a split, limits and shuffles", async () => {
    for (const name of ["data.jsonl", "data.parquet"]) {
      const train = ROWS.filter((r) => r.split === "train");
      expect(await loadDataset(path(name), { columns: ["id", "answer"], split: "train" })).toEqual(
        train.map(({ id, answer }) => ({ id, answer })),
      );
      expect(
        await loadDataset(path(name), { columns: { question: "prompt" }, split: "test", limit: 2 }),
      ).toEqual(
        ROWS.filter((r) => r.split === "test")
          .slice(0, 2)
          .map((r) => ({ prompt: r.question })),
      );
      expect(await loadDataset(path(name), { limit: 0 })).toEqual([]);

      const a = await loadDataset(path(name), { shuffle: true, seed: 7 });
      const b = await loadDataset(path(name), { shuffle: true, seed: 7 });
      const c = await loadDataset(path(name), { shuffle: true, seed: 8 });
      expect(a).toEqual(b);
      expect(a).not.toEqual(c);
      expect(a).not.toEqual(ROWS);
      expect([...a].sort((x, y) => Number(x.answer) - Number(y.answer))).toEqual(ROWS);
    }
  });

  it("stops reading at the limit (a bad line after it is never parsed)", async () => {
    expect(await loadDataset(path("bad.jsonl"), { limit: 2 })).toEqual([{ a: 1 }, { a: 2 }]);
  });
});

describe("loadDataset from a URL", () => {
  it("streams JSONL and gzipped JSONL and downloads parquet (query strings ignored)", async () => {
    expect(await loadDataset(`${baseUrl}/data.jsonl`)).toEqual(ROWS);
    expect(await loadDataset(`${baseUrl}/data.jsonl.gz?download=1`)).toEqual(ROWS);
    expect(await loadDataset(`${baseUrl}/data.parquet?rev=main`, { limit: 3 })).toEqual(
      ROWS.slice(0, 3),
    );
    expect(await loadDataset(`${baseUrl}/zstd.parquet`)).toEqual(ROWS);
  });

  it("reports a missing URL, and a file over maxBytes before reading it", async () => {
    expect(await rejection(loadDataset(`${baseUrl}/missing.jsonl`), "not_found")).toContain(
      "missing.jsonl",
    );
    expect(
      await rejection(loadDataset(`${baseUrl}/data.parquet`, { maxBytes: 100 }), "too_large"),
    ).toContain("maxBytes (100)");
    await rejection(loadDataset(`${baseUrl}/data.jsonl`, { maxBytes: 100 }), "too_large");
  });
});

describe("loadDataset errors", () => {
  it("names the missing file", async () => {
    const message = await rejection(loadDataset(path("nope.jsonl")), "not_found");
    expect(message).toBe(`dataset not found: ${path("nope.jsonl")}`);
    await rejection(loadDataset(path("nope.parquet")), "not_found");
    expect(await rejection(loadDataset(path("folder.jsonl")), "bad_option")).toContain(
      "is a directory",
    );
  });

  it("gives the line number of bad JSON and of a line that is not an object", async () => {
    expect(await rejection(loadDataset(path("bad.jsonl")), "bad_json")).toMatch(
      /bad\.jsonl: bad JSON on line 4: /,
    );
    expect(await rejection(loadDataset(path("array.jsonl")), "bad_json")).toContain(
      "line 2 is not a JSON object",
    );
  });

  it("refuses a file that is not parquet, and an unsupported codec by column and name", async () => {
    expect(await rejection(loadDataset(path("text.parquet")), "not_parquet")).toContain(
      "is not a parquet file",
    );
    await rejection(loadDataset(path("data.jsonl"), { format: "parquet" }), "not_parquet");
    const message = await rejection(loadDataset(path("brotli.parquet")), "unsupported_codec");
    expect(message).toContain('column "id" uses the BROTLI codec');
    expect(message).toContain("supported: UNCOMPRESSED, SNAPPY, GZIP, ZSTD");
  });

  it("reports corrupt gzip, unknown formats, missing columns and bad options", async () => {
    await rejection(loadDataset(path("corrupt.jsonl.gz")), "bad_gzip");
    expect(await rejection(loadDataset(path("data.txt")), "unknown_format")).toContain(
      'pass format: "jsonl" or "parquet"',
    );
    expect(
      await rejection(loadDataset(path("data.jsonl"), { columns: ["nope"] }), "missing_column"),
    ).toContain('line 1 has no column "nope"');
    expect(
      await rejection(loadDataset(path("data.parquet"), { columns: ["nope"] }), "missing_column"),
    ).toContain('no column "nope"; columns: id, question, answer, split');
    await rejection(loadDataset(path("data.jsonl"), { limit: -1 }), "bad_option");
    await rejection(loadDataset(path("data.jsonl"), { seed: 1.5 }), "bad_option");
    await rejection(loadDataset(path("data.jsonl"), { columns: [] }), "bad_option");
  });
});

describe("parquetValueToJson", () => {
  it("turns parquet values into JSON", () => {
    expect(
      parquetValueToJson({
        small: 5n,
        big: 2n ** 63n - 1n,
        when: new Date(Date.UTC(2024, 0, 2)),
        blob: new Uint8Array([104, 105]),
        nan: Number.NaN,
        negZero: -0,
        nested: [{ x: 1n, y: undefined }],
        floats: new Float32Array([0.5]),
      }),
    ).toEqual({
      small: 5,
      big: "9223372036854775807",
      when: "2024-01-02T00:00:00.000Z",
      blob: "aGk=",
      nan: null,
      negZero: 0,
      nested: [{ x: 1 }],
      floats: [0.5],
    });
  });
});
