import { eq, fillPlaceholders, sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { describe, expect, it } from "vitest";
import { compact } from "../../../src/api/storage/compiled";
import { batches } from "../../../src/api/storage/schema";

const dialect = new SQLiteAsyncDialect();
const run = sql.placeholder("run");
const now = sql.placeholder("now");

describe("compiled statements", () => {
  it("bind each placeholder once, inline constants and drop comments and line breaks", () => {
    const query = compact(
      dialect.sqlToQuery(sql`SELECT COUNT(*)   FROM groups
        -- a comment that would end the statement early on one line
        WHERE run = ${run} AND status = ${"queued"} AND note = ${"it's"}
          AND created_at <= ${now} AND (SELECT 1 FROM runs WHERE name = ${run}) AND x = ${null}`),
    );
    expect(query.sql).toBe(
      "SELECT COUNT(*) FROM groups WHERE run = ?1 AND status = 'queued' AND note = 'it''s' AND created_at <= ?2 AND (SELECT 1 FROM runs WHERE name = ?1) AND x = NULL",
    );
    expect(fillPlaceholders(query.params, { run: "r", now: 5 })).toEqual(["r", 5]);
  });

  it("leave quoted text and values that are not constants as they are", () => {
    const bytes = new Uint8Array([1]);
    const query = compact(
      dialect.sqlToQuery(
        sql`SELECT '-- not a comment ?', "odd
  name" FROM t WHERE b = ${bytes} AND c = ${run}`,
      ),
    );
    expect(query.sql).toBe(
      `SELECT '-- not a comment ?', "odd\n  name" FROM t WHERE b = ?1 AND c = ?2`,
    );
    expect(query.params).toHaveLength(2);
    expect(query.params[0]).toBe(bytes);
  });

  it("refuse numbered parameters, which the renumbering would clash with", () => {
    expect(() => compact(dialect.sqlToQuery(sql`SELECT ?1 + ${run}`))).toThrow(/numbered/);
  });

  it("keep what drizzle's builder maps through a column's encoder", () => {
    const d = drizzle({} as D1Database);
    const update = d
      .update(batches)
      .set({ status: "acked", ackedAt: sql`${now}` })
      .where(eq(batches.id, sql.placeholder("batchId")));
    const query = compact(update.toSQL());
    expect(query.sql).toBe(
      'update "batches" set "status" = \'acked\', "acked_at" = ?1 where "batches"."id" = ?2',
    );
    expect(fillPlaceholders(query.params, { now: 7, batchId: "b" })).toEqual([7, "b"]);
  });
});
