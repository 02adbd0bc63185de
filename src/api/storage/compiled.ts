/**
 * Hot-path queries written with drizzle's typed builder, built once per isolate with named
 * placeholders, then bound as raw D1 statements: they can share one D1 batch with raw SQL, and
 * a lease no longer pays for building its queries (which was about a quarter of its CPU).
 * Rows come back mapped by drizzle itself, as its own batch would map them.
 */
import { fillPlaceholders, type Query, type SQL } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";

type Orm = ReturnType<typeof drizzle>;
type Values = Record<string, unknown>;

/** What drizzle's `prepare()` gives: the built query and its row mapper. */
interface Prepared {
  getQuery(): Query;
  mapAllResult(rows: unknown, isFromBatch?: boolean): unknown;
}

/** A query builder; its rows' type is what `all()` resolves to. */
interface Preparable {
  prepare(): Prepared;
}

type RowsOf<Q> = Q extends { all(): Promise<infer R> }
  ? R extends (infer Row)[]
    ? Row
    : never
  : never;

export interface CompiledQuery<Row> {
  /** The statement with `values` in place of its placeholders. */
  bind(d1: D1Database, values: Values): D1PreparedStatement;
  /** This statement's rows out of a D1 batch result. */
  rows(result: D1Result): Row[];
}

/** A drizzle query builder compiled on first use (placeholders: `sql.placeholder(name)`). */
export function compiled<Q extends Preparable>(build: (d: Orm) => Q): CompiledQuery<RowsOf<Q>> {
  let prepared: { query: Query; mapper: Prepared } | null = null;
  const prepare = (d1: D1Database) => {
    if (!prepared) {
      const mapper = build(drizzle(d1)).prepare();
      prepared = { query: mapper.getQuery(), mapper };
    }
    return prepared;
  };
  return {
    bind(d1, values) {
      const { query } = prepare(d1);
      return d1.prepare(query.sql).bind(...fillPlaceholders(query.params, values));
    },
    rows(result) {
      if (!prepared) throw new Error("rows() before bind(): the query was never compiled");
      return prepared.mapper.mapAllResult(result, true) as RowsOf<Q>[];
    },
  };
}

const dialect = new SQLiteAsyncDialect();

/** Raw SQL (a drizzle `sql` template with placeholders) compiled on first use; no row mapping. */
export function compiledSql(build: () => SQL): {
  bind(d1: D1Database, values: Values): D1PreparedStatement;
} {
  let query: Query | null = null;
  return {
    bind(d1, values) {
      query ??= dialect.sqlToQuery(build());
      return d1.prepare(query.sql).bind(...fillPlaceholders(query.params, values));
    },
  };
}
