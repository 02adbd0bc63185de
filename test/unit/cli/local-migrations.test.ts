/**
 * The dev server's D1 migrations (scripts/local-migrations.mjs) against a real local D1: the
 * package's migrations on a fresh state, nothing twice, the state wrangler itself then finds
 * up to date, a failing migration that changes nothing, and wrangler's file order.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { afterEach, describe, expect, it } from "vitest";
import {
  unstable_getMiniflareWorkerOptions,
  unstable_readConfig,
  unstable_splitSqlQuery,
} from "wrangler";
import {
  applyLocalMigrations,
  migrationFiles,
  migrationSettings,
} from "../../../scripts/local-migrations.mjs";

const ROOT = join(import.meta.dirname, "..", "..", "..");
// The DB binding's database as dev.mjs (and wrangler) key its local file: from wrangler.jsonc.
const DATABASE_ID = unstable_getMiniflareWorkerOptions(
  unstable_readConfig({ config: join(ROOT, "wrangler.jsonc") }),
).workerOptions.d1Databases?.DB;

const instances: Miniflare[] = [];
afterEach(async () => {
  await Promise.all(instances.splice(0).map((mf) => mf.dispose()));
});

async function localDatabase(persistTo: string) {
  const mf = new Miniflare({
    modules: true,
    script: "export default {}",
    d1Databases: { DB: DATABASE_ID! },
    d1Persist: join(persistTo, "v3", "d1"),
  });
  instances.push(mf);
  return mf.getD1Database("DB");
}

/** The database with `batch` replaced; `call` numbers the batches from 0. */
function withBatch(
  db: D1Database,
  batch: (statements: D1PreparedStatement[], call: number) => Promise<D1Result[]>,
): D1Database {
  let calls = 0;
  return new Proxy(db, {
    get(target, key) {
      if (key === "batch") return (statements: D1PreparedStatement[]) => batch(statements, calls++);
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * The database with the batches numbered in `failing` run with a failing statement after the
 * migration's own ones and then rejected as Miniflare's local D1 once rejected a migration, with
 * its own assertion ("false == true"): a retry must find the batch rolled back.
 */
function failingBatches(db: D1Database, failing: number[]): D1Database {
  return withBatch(db, async (statements, call) => {
    if (!failing.includes(call)) return db.batch(statements);
    await expect(db.batch([...statements, db.prepare("SELECT * FROM nope")])).rejects.toThrow(
      /no such table/,
    );
    throw new Error("false == true");
  });
}

describe("applyLocalMigrations", () => {
  it("applies the package's migrations once, as wrangler records them, so wrangler finds none pending", async () => {
    const persistTo = mkdtempSync(join(tmpdir(), "local-migrations-"));
    const settings = migrationSettings(
      unstable_readConfig({ config: join(ROOT, "wrangler.jsonc") }),
    );
    expect(settings).toEqual({ binding: "DB", dir: join(ROOT, "drizzle"), table: "d1_migrations" });
    const db = await localDatabase(persistTo);

    const applied = await applyLocalMigrations(db, settings!, unstable_splitSqlQuery);
    expect(applied).toEqual(migrationFiles(join(ROOT, "drizzle")));
    expect(applied[0]).toBe("0000_init.sql");
    const recorded = await db.prepare("SELECT id, name FROM d1_migrations ORDER BY id").all();
    expect(recorded.results.map((r) => r.name)).toEqual(applied);
    // The last migration's objects exist (a statement left out by the splitting would not).
    const view = await db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'view' AND name = 'metric_values'")
      .all();
    expect(view.results).toHaveLength(1);
    expect(await applyLocalMigrations(db, settings!, unstable_splitSqlQuery)).toEqual([]);

    await Promise.all(instances.splice(0).map((mf) => mf.dispose()));
    const wrangler = spawnSync(
      process.execPath,
      [
        join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js"),
        "d1",
        "migrations",
        "apply",
        "DB",
        "--local",
        "--persist-to",
        persistTo,
      ],
      {
        cwd: ROOT,
        encoding: "utf8",
        env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
      },
    );
    expect(wrangler.status, wrangler.stderr).toBe(0);
    expect(wrangler.stdout).toContain("No migrations to apply");
  }, 60_000);

  it("stops at a failing migration: it changes nothing and is not recorded, the ones before stay", async () => {
    const dir = mkdtempSync(join(tmpdir(), "migrations-"));
    writeFileSync(join(dir, "0000_first.sql"), "CREATE TABLE first (id INTEGER PRIMARY KEY);");
    writeFileSync(
      join(dir, "0001_broken.sql"),
      "CREATE TABLE second (id INTEGER PRIMARY KEY);\n--> statement-breakpoint\nINSERT INTO missing VALUES (1);",
    );
    const db = await localDatabase(mkdtempSync(join(tmpdir(), "local-migrations-")));
    const settings = { dir, table: "d1_migrations" };

    // Both runs failing alike: the message says it once.
    await expect(applyLocalMigrations(db, settings, unstable_splitSqlQuery)).rejects.toThrow(
      /D1 migration 0001_broken\.sql failed: [^(]*no such table: missing[^(]*$/,
    );
    const tables = await db
      .prepare("SELECT name FROM sqlite_master WHERE name IN ('first', 'second') ORDER BY name")
      .all();
    expect(tables.results.map((r) => r.name)).toEqual(["first"]);
    const recorded = await db.prepare("SELECT name FROM d1_migrations").all();
    expect(recorded.results.map((r) => r.name)).toEqual(["0000_first.sql"]);
  });

  it("runs a migration that failed once again, and says so; a second failure names both", async () => {
    const dir = mkdtempSync(join(tmpdir(), "migrations-"));
    writeFileSync(join(dir, "0000_first.sql"), "CREATE TABLE first (id INTEGER PRIMARY KEY);");
    writeFileSync(join(dir, "0001_alter.sql"), "ALTER TABLE first ADD note text;");
    const db = await localDatabase(mkdtempSync(join(tmpdir(), "local-migrations-")));
    const retried: string[] = [];
    const applied = await applyLocalMigrations(
      failingBatches(db, [1]),
      { dir, table: "d1_migrations" },
      unstable_splitSqlQuery,
      (name, firstError) => retried.push(`${name}: ${firstError}`),
    );
    expect(applied).toEqual(["0000_first.sql", "0001_alter.sql"]);
    expect(retried).toEqual(["0001_alter.sql: false == true"]);
    // The rejected run had added the column and recorded the migration, then rolled back: the
    // retry (an ALTER that would fail on a second column of that name) applied it once.
    const columns = await db.prepare("SELECT name FROM pragma_table_info('first')").all();
    expect(columns.results.map((r) => r.name)).toEqual(["id", "note"]);

    // The first run failing on its own, the second on the SQL: both are named.
    writeFileSync(join(dir, "0002_broken.sql"), "INSERT INTO missing VALUES (1);");
    await expect(
      applyLocalMigrations(
        failingBatches(db, [0]),
        { dir, table: "d1_migrations" },
        unstable_splitSqlQuery,
      ),
    ).rejects.toThrow(
      /D1 migration 0002_broken\.sql failed: .*no such table: missing.* \(its first run: false == true\)/,
    );
    const recorded = await db.prepare("SELECT name FROM d1_migrations ORDER BY id").all();
    expect(recorded.results.map((r) => r.name)).toEqual(["0000_first.sql", "0001_alter.sql"]);
  });

  it("a first run that committed but failed to answer counts as applied, by its bookkeeping row", async () => {
    const dir = mkdtempSync(join(tmpdir(), "migrations-"));
    writeFileSync(join(dir, "0000_first.sql"), "CREATE TABLE first (id INTEGER PRIMARY KEY);");
    const db = await localDatabase(mkdtempSync(join(tmpdir(), "local-migrations-")));
    const answerLost = withBatch(db, async (statements, call) => {
      const result = await db.batch(statements);
      if (call === 0) throw new Error("the connection closed");
      return result;
    });
    const retried: string[] = [];
    const applied = await applyLocalMigrations(
      answerLost,
      { dir, table: "d1_migrations" },
      unstable_splitSqlQuery,
      (name, firstError) => retried.push(`${name}: ${firstError}`),
    );
    expect(applied).toEqual(["0000_first.sql"]);
    expect(retried).toEqual(["0000_first.sql: the connection closed"]);
    const recorded = await db.prepare("SELECT name FROM d1_migrations").all();
    expect(recorded.results.map((r) => r.name)).toEqual(["0000_first.sql"]);
  });

  it("applies what wrangler applies: a migration of comments only; a last statement without ; fails", async () => {
    const dir = mkdtempSync(join(tmpdir(), "migrations-"));
    writeFileSync(
      join(dir, "0000_custom.sql"),
      "-- Custom SQL migration file, put your code below! --\n",
    );
    writeFileSync(join(dir, "0001_unterminated.sql"), "CREATE TABLE t (id INTEGER PRIMARY KEY)");
    const db = await localDatabase(mkdtempSync(join(tmpdir(), "local-migrations-")));
    await expect(
      applyLocalMigrations(db, { dir, table: "d1_migrations" }, unstable_splitSqlQuery),
    ).rejects.toThrow(/D1 migration 0001_unterminated\.sql failed/);
    const recorded = await db.prepare("SELECT name FROM d1_migrations").all();
    expect(recorded.results.map((r) => r.name)).toEqual(["0000_custom.sql"]);
  });

  it("finds the database by binding or database_name, with wrangler's defaults", () => {
    const config = {
      configPath: "/project/wrangler.jsonc",
      d1_databases: [
        { binding: "OTHER", database_name: "other", migrations_dir: "node_modules/x/drizzle" },
        { binding: "STORE", database_name: "DB", migrations_dir: "", migrations_table: "" },
      ],
    };
    expect(migrationSettings(config)).toEqual({
      binding: "STORE",
      dir: "/project/migrations",
      table: "d1_migrations",
    });
    expect(migrationSettings(config, "OTHER")).toEqual({
      binding: "OTHER",
      dir: "/project/node_modules/x/drizzle",
      table: "d1_migrations",
    });
    expect(migrationSettings(config, "NONE")).toBeNull();
  });

  it("says which folder is missing, and orders files by their number as wrangler does", async () => {
    const db = await localDatabase(mkdtempSync(join(tmpdir(), "local-migrations-")));
    const missing = join(tmpdir(), "no-such-migrations-folder");
    await expect(
      applyLocalMigrations(db, { dir: missing, table: "d1_migrations" }, unstable_splitSqlQuery),
    ).rejects.toThrow(`the D1 migrations folder ${missing} does not exist`);

    const dir = mkdtempSync(join(tmpdir(), "migrations-"));
    for (const name of ["10_ten.sql", "9_nine.sql", "0011_b.sql", "0011_a.sql", "notes.md"]) {
      writeFileSync(join(dir, name), "");
    }
    expect(migrationFiles(dir)).toEqual(["9_nine.sql", "10_ten.sql", "0011_a.sql", "0011_b.sql"]);
  });
});
