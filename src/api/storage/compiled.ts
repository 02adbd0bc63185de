/**
 * Hot-path queries written with drizzle's typed builder, built once per isolate with named
 * placeholders, then bound as raw D1 statements: they can share one D1 batch with raw SQL, and
 * a lease no longer pays for building its queries (which was about a quarter of its CPU).
 * Rows come back mapped by drizzle itself, as its own batch would map them.
 *
 * Each compiled statement is sent on every lease and ack, and the local D1 parses and validates
 * every statement's text and each bound value separately: the text is sent without comments or
 * line breaks, constants drizzle binds ("queued", booleans) are written into it, and a
 * placeholder used several times is bound once (`?N`).
 */
import { fillPlaceholders, is, Param, Placeholder, type Query, type SQL } from "drizzle-orm";
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
      prepared = { query: compact(mapper.getQuery()), mapper };
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
      query ??= compact(dialect.sqlToQuery(build()));
      return d1.prepare(query.sql).bind(...fillPlaceholders(query.params, values));
    },
  };
}

/** A constant as SQL text, or null when it stays a bound value. */
function literal(value: unknown): string | null {
  if (value === null) return "NULL";
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "string") return `'${value.replaceAll("'", "''")}'`;
  return null;
}

/** Which placeholder a bound value is (the same name with the same encoder binds once). */
function placeholderKey(param: unknown, encoders: Map<unknown, number>): string | null {
  if (is(param, Placeholder)) return param.name;
  if (is(param, Param) && is(param.value, Placeholder)) {
    if (!encoders.has(param.encoder)) encoders.set(param.encoder, encoders.size);
    return `${param.value.name}\u0000${encoders.get(param.encoder)}`;
  }
  return null;
}

/**
 * The same statement, shorter to send and to check: comments and line breaks out (outside
 * quotes), constants inlined, each placeholder bound once as `?N`.
 */
export function compact(query: Query): Query {
  const params: unknown[] = [];
  const indexOf = new Map<string, number>();
  const encoders = new Map<unknown, number>();
  let out = "";
  let next = 0;
  let quote: string | null = null;
  const text = query.sql;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quote) {
      out += ch;
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"' || ch === "`") {
      quote = ch;
      out += ch;
    } else if (ch === "-" && text[i + 1] === "-") {
      while (i + 1 < text.length && text[i + 1] !== "\n") i++;
    } else if (/\s/.test(ch)) {
      while (i + 1 < text.length && /\s/.test(text[i + 1]!)) i++;
      if (out.length > 0 && !out.endsWith(" ")) out += " ";
    } else if (ch === "?") {
      if (/\d/.test(text[i + 1] ?? "")) {
        throw new Error("compiled statements take drizzle placeholders, not numbered parameters");
      }
      const param = query.params[next++];
      const key = placeholderKey(param, encoders);
      const constant = key === null ? literal(param) : null;
      if (constant !== null) {
        out += constant;
      } else if (key === null) {
        params.push(param);
        out += `?${params.length}`;
      } else {
        if (!indexOf.has(key)) {
          params.push(param);
          indexOf.set(key, params.length);
        }
        out += `?${indexOf.get(key)}`;
      }
    } else {
      out += ch;
    }
  }
  if (next !== query.params.length) {
    throw new Error(`compact: ${query.params.length} values bound to ${next} placeholders`);
  }
  return { sql: out.trimEnd(), params };
}
