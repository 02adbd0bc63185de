/**
 * The rows of raw SQL, checked in one place. A raw statement (one the drizzle builder cannot say)
 * names the zod schema of its row, and its rows come back parsed by it: named, typed from the
 * schema (`z.infer`), and a row that does not match (a renamed column, a NULL the reader does not
 * expect) fails here, naming the column, instead of flowing on under a type it does not have.
 * Builder and compiled drizzle queries need none of this: drizzle maps their rows from schema/.
 */
import type { z } from "zod";

function parsed<S extends z.ZodType>(row: S, value: unknown): z.output<S> {
  const result = row.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw new Error(
    `a D1 row does not match its schema: ${issue?.path.join(".") || "row"}: ${issue?.message ?? "invalid"}`,
  );
}

/** The rows of a statement's result (one of a D1 batch, or of `all()`), each parsed by `row`. */
export function rowsOf<S extends z.ZodType>(result: D1Result, row: S): z.output<S>[] {
  return (result.results ?? []).map((value) => parsed(row, value));
}

/** All rows of `statement`, each parsed by `row`. */
export async function allRows<S extends z.ZodType>(
  statement: D1PreparedStatement,
  row: S,
): Promise<z.output<S>[]> {
  return rowsOf(await statement.all(), row);
}

/** The first row of `statement` parsed by `row`, or null when there is none. */
export async function firstRow<S extends z.ZodType>(
  statement: D1PreparedStatement,
  row: S,
): Promise<z.output<S> | null> {
  const value = await statement.first();
  return value === null ? null : parsed(row, value);
}
