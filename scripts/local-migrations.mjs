/**
 * Applies a project's pending D1 migrations to a local D1 database the way
 * `wrangler d1 migrations apply DB --local` does: the same bookkeeping table (`d1_migrations`, or
 * the config's `migrations_table`), the same file order, and the same statements: wrangler appends
 * its bookkeeping INSERT to the migration's text and splits the whole with its own splitter
 * (`unstable_splitSqlQuery`), one transaction per migration. So either can apply the next
 * migration to a state the other prepared, and a migration that fails here fails there.
 *
 * Why not wrangler itself: it starts a Miniflare instance per migration (about 0.6 s each here, 14 s
 * for a fresh state of this package's migrations); scripts/dev.mjs calls this on the one
 * short-lived instance that also seeds the tokenizers.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/**
 * The D1 database a wrangler config names `name` (its binding or its database_name, as
 * `wrangler d1 migrations apply <name>` finds it), with where its migrations are.
 */
export function migrationSettings(config, name = "DB") {
  const database = config.d1_databases?.find((d) => d.binding === name || d.database_name === name);
  if (!database) return null;
  return {
    binding: database.binding,
    dir: resolve(dirname(config.configPath), database.migrations_dir || "migrations"),
    table: database.migrations_table || "d1_migrations",
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
 * throws an Error naming its file; the ones before it stay applied. A migration is run a second
 * time before it counts as failed; `onRetried(name, firstError)` hears of one that then applied.
 */
export async function applyLocalMigrations(db, settings, splitSqlQuery, onRetried) {
  const { dir, table } = settings;
  if (!existsSync(dir)) throw new Error(`the D1 migrations folder ${dir} does not exist`);
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
    // wrangler's text exactly: its INSERT joins the migration's last statement when that lacks a
    // `;`, and a migration of comments only becomes the INSERT's leading comment.
    const text = `${readFileSync(join(dir, name), "utf8")}
								INSERT INTO ${table} (name)
								values ('${name}');
						`;
    const apply = () => db.batch(splitSqlQuery(text).map((query) => db.prepare(query)));
    let first;
    try {
      await apply();
      continue;
    } catch (error) {
      first = error;
    }
    // A failed migration rolls back whole, so running it again is safe, and a real SQL error
    // fails the same way again. Miniflare's local D1 has failed a migration once on its own
    // bookkeeping (its assertion "false == true" after an ALTER TABLE, under a loaded CI machine)
    // and applied it when run again.
    try {
      await apply();
    } catch (error) {
      // A first run that committed but whose answer was lost: its own bookkeeping row says so.
      const recorded = await db.prepare(`SELECT 1 FROM ${table} WHERE name = ?`).bind(name).all();
      if (recorded.results.length === 0) {
        const again = messageOf(error);
        const before = messageOf(first) === again ? "" : ` (its first run: ${messageOf(first)})`;
        throw new Error(`D1 migration ${name} failed: ${again}${before}`);
      }
    }
    onRetried?.(name, messageOf(first));
  }
  return pending;
}

function messageOf(error) {
  const cause = error?.cause ?? error;
  return cause?.message ?? String(cause);
}
