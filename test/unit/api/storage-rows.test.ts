import { describe, expect, it } from "vitest";
import { z } from "zod";
import { allRows, firstRow, rowsOf } from "../../../src/api/storage/rows";

/** A statement answering `rows` (first() gives the first, or null when there is none). */
function statement(rows: Record<string, unknown>[]): D1PreparedStatement {
  return {
    first: async () => rows[0] ?? null,
    all: async () => ({ results: rows, success: true, meta: {} }),
  } as unknown as D1PreparedStatement;
}

const row = z.object({ id: z.number(), payload_key: z.string().nullable() });

describe("storage rows", () => {
  it("gives named, typed rows and null for no row", async () => {
    expect(await firstRow(statement([{ id: 1, payload_key: "k", extra: 2 }]), row)).toEqual({
      id: 1,
      payload_key: "k",
    });
    expect(await firstRow(statement([]), row)).toBeNull();
    expect(await allRows(statement([{ id: 1, payload_key: null }]), row)).toEqual([
      { id: 1, payload_key: null },
    ]);
  });

  it("fails on a row of another shape, naming the column", async () => {
    await expect(firstRow(statement([{ id: "1", payload_key: "k" }]), row)).rejects.toThrow(
      /a D1 row does not match its schema: id:/,
    );
    const result = { results: [{ id: 1 }], success: true, meta: {} } as unknown as D1Result;
    expect(() => rowsOf(result, row)).toThrow(/payload_key/);
  });
});
