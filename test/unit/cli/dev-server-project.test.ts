/**
 * scripts/dev.mjs serving a project of its own (--project, as `atropos-edge dev` in a project
 * made by init): a config without static assets starts and serves its Worker, one with assets
 * but no binding serves them in front of it; a failing D1 migration stops the start with the
 * migration's error, which the caller sees.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startDevProcess } from "../../../src/cli/dev-process";
import { freePort } from "../../e2e/harness";

function project(migration: string, assets?: { directory: string }): string {
  const dir = mkdtempSync(join(tmpdir(), "dev-project-"));
  mkdirSync(join(dir, "migrations"));
  if (assets) {
    mkdirSync(join(dir, assets.directory));
    writeFileSync(join(dir, assets.directory, "hello.txt"), "a static file");
  }
  writeFileSync(
    join(dir, "wrangler.jsonc"),
    JSON.stringify({
      name: "dev-project",
      main: "worker.js",
      compatibility_date: "2025-09-01",
      ...(assets ? { assets } : {}),
      d1_databases: [
        { binding: "DB", database_name: "db", database_id: "db", migrations_dir: "migrations" },
      ],
    }),
  );
  writeFileSync(
    join(dir, "worker.js"),
    `export default { async fetch(request, env) {
      const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM notes").first();
      return Response.json({ notes: row.n });
    } }`,
  );
  writeFileSync(join(dir, "migrations", "0000_notes.sql"), migration);
  return dir;
}

describe("dev.mjs --project", () => {
  it("serves a Worker whose config has no assets, on its migrated D1", async () => {
    const dir = project(
      "CREATE TABLE notes (id integer PRIMARY KEY);\nINSERT INTO notes VALUES (1);",
    );
    const lines: string[] = [];
    const dev = await startDevProcess({
      port: await freePort(),
      persistTo: join(dir, "state"),
      projectRoot: dir,
      onProgress: (line) => lines.push(line),
    });
    try {
      expect(await (await fetch(`${dev.url}/`)).json()).toEqual({ notes: 1 });
      expect(lines).toContainEqual(
        expect.stringMatching(/^dev: D1 migrations applied: 0000_notes\.sql \(1\)/),
      );
    } finally {
      await dev.stop();
    }
  }, 90_000);

  it("serves static assets that have no binding in front of the Worker", async () => {
    const dir = project("CREATE TABLE notes (id integer PRIMARY KEY);", { directory: "public" });
    const dev = await startDevProcess({
      port: await freePort(),
      persistTo: join(dir, "state"),
      projectRoot: dir,
    });
    try {
      expect(await (await fetch(`${dev.url}/hello.txt`)).text()).toBe("a static file");
      expect(await (await fetch(`${dev.url}/`)).json()).toEqual({ notes: 0 });
    } finally {
      await dev.stop();
    }
  }, 90_000);

  it("stops on a failing migration, and the caller sees why", async () => {
    const dir = project("INSERT INTO missing VALUES (1);");
    const started = startDevProcess({
      port: await freePort(),
      persistTo: join(dir, "state"),
      projectRoot: dir,
    });
    await expect(started).rejects.toThrow(
      /dev: D1 migration 0000_notes\.sql failed: no such table: missing/,
    );
  }, 90_000);
});
