/**
 * Where `init` finds atropos-edge's own lockfile: a checkout's package-lock.json, or in an
 * installed package the copy `npm pack` ships (npm never packs package-lock.json itself).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ownLockfilePath } from "../../../src/cli/init-command";

function packageRoot(files: string[]): string {
  const root = mkdtempSync(join(tmpdir(), "init-lock-"));
  mkdirSync(join(root, "templates"));
  for (const file of files) writeFileSync(join(root, file), "{}\n");
  return root;
}

describe("init's source lockfile", () => {
  it("an installed package uses the lockfile it ships in templates/", () => {
    const root = packageRoot(["templates/atropos-edge.lock.json"]);
    expect(ownLockfilePath(root)).toBe(join(root, "templates", "atropos-edge.lock.json"));
  });

  it("a checkout prefers its own package-lock.json (a shipped copy may be stale)", () => {
    const root = packageRoot(["package-lock.json", "templates/atropos-edge.lock.json"]);
    expect(ownLockfilePath(root)).toBe(join(root, "package-lock.json"));
  });

  it("none at all: null (init then writes no lockfile)", () => {
    expect(ownLockfilePath(packageRoot([]))).toBeNull();
  });
});
