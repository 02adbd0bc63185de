/**
 * Where `init` finds atropos-edge's own lockfile: a checkout's package-lock.json, or in an
 * installed package the copy `npm pack` ships (npm never packs package-lock.json itself).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ownLockfilePath, runInit, vendorCheckout } from "../../../src/cli/init-command";

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

describe("init from a checkout", () => {
  it("packs the checkout into vendor/ and depends on it by a relative file: spec", () => {
    const target = mkdtempSync(join(tmpdir(), "init-vendor-"));
    const lines: string[] = [];
    expect(runInit({ dir: join(target, "proj"), log: (l) => lines.push(l) })).toBe(0);
    const project = join(target, "proj");
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    const spec = manifest.dependencies["atropos-edge"]!;
    expect(spec).toMatch(/^file:vendor\/atropos-edge-[\d.]+\.tgz$/);
    // A real gzip'd npm tarball, byte for byte as packed (not rewritten as text).
    const tarball = readFileSync(join(project, spec.slice(5)));
    const files = execFileSync("tar", ["-tzf", "-"], { input: tarball, encoding: "utf8" });
    expect(files.split("\n")).toContain("package/package.json");
    expect(lines.join("\n")).toContain("packed it into vendor/");
    // The lockfile pins that tarball with its integrity, so `npm install --offline` can use it.
    const lock = JSON.parse(readFileSync(join(project, "package-lock.json"), "utf8")) as {
      packages: Record<string, { resolved?: string; integrity?: string }>;
    };
    expect(lock.packages["node_modules/atropos-edge"]?.resolved).toBe(spec);
    expect(lock.packages["node_modules/atropos-edge"]?.integrity).toMatch(/^sha512-/);
  }, 60_000);

  it("a package that is not a git checkout is not packed", () => {
    const root = mkdtempSync(join(tmpdir(), "init-installed-"));
    expect(vendorCheckout(join(root, "proj"), root)).toBeNull();
  });
});
