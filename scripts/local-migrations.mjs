/**
 * Applies a project's pending D1 migrations to a local D1 database the way
 * `wrangler d1 migrations apply DB --local` does: the same bookkeeping table (`d1_migrations`, or
 * the config's `migrations_table`), the same file order and statement splitting (wrangler's own
 * `unstable_splitSqlQuery`), each migration and its bookkeeping row in one transaction. So either
 * can apply the next migration to a state the other prepared.
 *
 * Why not wrangler itself: it starts a Miniflare instance per migration (about 0.6 s each here, 14 s
 * for a fresh state of this package's migrations); scripts/dev.mjs calls this on the one
 * short-lived instance that also seeds the tokenizers.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/** The D1 database bound as `binding` in a wrangler config, with where its migrations are. */
export function migrationSettings(config, binding = "DB") {
  const database = config.d1_databases?.find((d) => d.binding === binding);
  if (!database) return null;
  return {
    dir: resolve(dirname(config.configPath), database.migrations_dir ?? "migrations"),
    table: database.migrations_table ?? "d1_migrations",
  };
}

/**
 * The migration files of `dir` in the order wrangler applies them: by name, then (a stable sort)
 * by the number before the first `_`.
 */
export function migrationFiles(dir) {
  const number = (name) => Number.parseInt(name.split("_")[0], 10);
  const byNumber = (a, b) => (number(a) < number(b) ? -1 : number(a) > number(b) ? 1 : 0);
  return readdirSync(dir)
    .filter((name) => name.endsWith(".sql"))
    .sort()
    .sort(byNumber);
}

/**
 * Applies the migrations of `settings.dir` that `settings.table` does not list, in order, and
 * returns their names. A failing migration changes nothing (its transaction rolls back) and
 * throws an Error naming its file; the ones before it stay applied.
 */
export async function applyLocalMigrations(db, settings, splitSqlQuery) {
  const { dir, table } = settings;
  if (!existsSync(dir)) throw new Error(`the D1 migrations folder ${dir} does not exist`);
  if (!/^\w+$/.test(table)) throw new Error(`migrations_table '${table}' is not a plain name`);
  // wrangler's own definition of the table, character for character in what it stores.
  await db
    .prepare(
      `CREATE TABLE IF NOT EXISTS ${table}(
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		name       TEXT UNIQUE,
		applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
)`,
    )
    .run();
  const { results } = await db.prepare(`SELECT name FROM ${table} ORDER BY id`).all();
  const applied = new Set(results.map((row) => row.name));
  const pending = migrationFiles(dir).filter((name) => !applied.has(name));
  for (const name of pending) {
    const statements = splitSqlQuery(readFileSync(join(dir, name), "utf8")).map((query) =>
      db.prepare(query),
    );
    statements.push(db.prepare(`INSERT INTO ${table} (name) VALUES (?1)`).bind(name));
    try {
      await db.batch(statements);
    } catch (error) {
      const cause = error?.cause ?? error;
      throw new Error(`D1 migration ${name} failed: ${cause?.message ?? cause}`);
    }
  }
  return pending;
}
