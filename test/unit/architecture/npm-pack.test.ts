/**
 * What `npm pack` ships: the package's code, docs, templates and examples, and the CHANGELOG;
 * never tests, test fixtures or local state. The check runs on a copy of the repository's files
 * with typical local state planted in it (a fitted calibration, Python caches, wrangler state,
 * logs, a project's node_modules and secrets), as a user's checkout would have after running it.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../../..");

const LOCAL_STATE = [
  "examples/agent-tasks/calibration.json",
  "examples/python/__pycache__/lease_trainer.cpython-312.pyc",
  "src/cli/__pycache__/x.pyc",
  "docs/debug.log",
  "templates/project/.wrangler/state/v3/d1/db.sqlite",
  "templates/project/node_modules/left-pad/index.js",
  "templates/project/.dev.vars",
  "examples/python/.env",
];

describe("npm pack", () => {
  const dir = mkdtempSync(join(tmpdir(), "npm-pack-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("ships the package and the CHANGELOG, and no tests, fixtures or local state", () => {
    const tracked = execFileSync(
      "git",
      ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
      {
        cwd: ROOT,
        encoding: "utf8",
      },
    )
      .split("\0")
      .filter(Boolean);
    for (const file of tracked) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      cpSync(join(ROOT, file), join(dir, file));
    }
    for (const file of LOCAL_STATE) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), "local state\n");
    }
    const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: dir,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    const files = (JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    expect(files).toEqual(
      expect.arrayContaining([
        "package.json",
        "README.md",
        "CHANGELOG.md",
        "bin/atropos-edge.mjs",
        "src/sdk/env.ts",
        "src/envs/data/search-corpus.ts",
        "docs/JUDGES.md",
        "examples/agent-tasks/tasks.jsonl",
        "templates/project/package.json",
        "wrangler.jsonc",
      ]),
    );
    expect(files.filter((f) => f.startsWith("test/") || f.includes("/fixtures/"))).toEqual([]);
    expect(files.filter((f) => LOCAL_STATE.includes(f))).toEqual([]);
    expect(
      files.filter((f) =>
        /(^|\/)(node_modules|\.wrangler|__pycache__|screenshots)\/|\.log$|\.pyc$|(^|\/)\.(dev\.vars|env)$/.test(
          f,
        ),
      ),
    ).toEqual([]);
  }, 120_000);
});
