/**
 * bench:api `--wal` reads strace's lines: 4 KiB writes to the D1 WAL are pages, syncs of the D1
 * database file are checkpoints; other files' writes and syncs, and the WAL's frame headers, are not.
 */
import { describe, expect, it } from "vitest";
import { parseTrace } from "../../../bench/api/wal-trace";

const TRACE = [
  '101 1795900000.000100 pwrite64(49, "\\0\\0\\0\\2"..., 24, 32) = 24',
  '101 1795900000.000200 pwrite64(49, "\\r\\0\\0\\0"..., 4096, 56) = 4096',
  '101 1795900000.000300 pwrite64(49, "\\r\\0\\0\\0"..., 4096, 4176) = 4096',
  '101 1795900000.000400 pwrite64(43, "\\r\\0\\0\\0"..., 4096, 0) = 4096',
  "101 1795900000.000500 fsync(49)                = 0",
  '101 1795900000.002000 pwrite64(48, "\\r\\0\\0\\0"..., 4096, 8192) = 4096',
  "101 1795900000.003250 fsync(48)                = 0",
  "101 1795900000.004000 fsync(43)                = 0",
].join("\n");

describe("parseTrace", () => {
  it("counts WAL pages and database-file syncs, with their times", () => {
    expect(parseTrace(TRACE, { wal: "49", db: "48" })).toEqual({
      walPages: 2,
      checkpoints: [1795900000003.25],
    });
  });

  it("counts nothing of another database's files", () => {
    expect(parseTrace(TRACE, { wal: "7", db: "8" })).toEqual({ walPages: 0, checkpoints: [] });
  });
});
