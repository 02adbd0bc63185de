/** Types of local-migrations.mjs (a plain Node script, run without a TypeScript loader). */
export interface MigrationSettings {
  /** The binding of the database (the config's entry found by binding or database_name). */
  binding: string;
  /** The migrations folder, absolute. */
  dir: string;
  /** The bookkeeping table (wrangler's `d1_migrations` unless the config names another). */
  table: string;
}

export declare function migrationSettings(
  config: {
    configPath?: string;
    d1_databases?: {
      binding: string;
      database_name?: string;
      migrations_dir?: string;
      migrations_table?: string;
    }[];
  },
  name?: string,
): MigrationSettings | null;
export declare function migrationFiles(dir: string): string[];
export declare function applyLocalMigrations(
  db: D1Database,
  settings: Pick<MigrationSettings, "dir" | "table">,
  splitSqlQuery: (sql: string) => string[],
  onRetried?: (name: string, firstError: string) => void,
): Promise<string[]>;
