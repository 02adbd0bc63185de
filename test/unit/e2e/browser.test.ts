import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type DiscoveryInputs, findBrowser, MISSING_BROWSER, untar } from "../../e2e/browser";

const BUNDLED = { binDir: "/nm/@sparticuz/chromium/bin", version: "143.0.4" };

function inputs(over: {
  env?: Record<string, string>;
  path?: Record<string, string>;
  bundled?: boolean;
  existing?: string[];
}): DiscoveryInputs {
  return {
    env: over.env ?? {},
    onPath: (name) => over.path?.[name] ?? null,
    bundled: () => (over.bundled === false ? null : BUNDLED),
    exists: (file) => (over.existing ?? []).includes(file),
  };
}

describe("browser discovery for the browser tests", () => {
  const everything = {
    env: { CHROMIUM_PATH: "/opt/chrome/chrome" },
    existing: ["/opt/chrome/chrome"],
    path: {
      chromium: "/usr/bin/chromium",
      "chromium-browser": "/usr/bin/chromium-browser",
      "google-chrome": "/usr/bin/google-chrome",
    },
  };

  it("takes CHROMIUM_PATH first, then PATH (chromium, chromium-browser, google-chrome), then the package", () => {
    expect(findBrowser(inputs(everything))).toEqual({
      kind: "executable",
      from: "CHROMIUM_PATH",
      path: "/opt/chrome/chrome",
    });
    expect(findBrowser(inputs({ ...everything, env: {} }))).toMatchObject({
      from: "PATH",
      path: "/usr/bin/chromium",
    });
    expect(
      findBrowser(inputs({ path: { "google-chrome": "/g", "chromium-browser": "/cb" } })),
    ).toMatchObject({ path: "/cb" });
    expect(findBrowser(inputs({ path: { "google-chrome": "/g" } }))).toMatchObject({ path: "/g" });
    expect(findBrowser(inputs({}))).toEqual({ kind: "bundled", ...BUNDLED });
  });

  it("ATROPOS_EDGE_BROWSER=bundled skips every system browser; =system never uses the package", () => {
    const env = { ...everything.env, ATROPOS_EDGE_BROWSER: "bundled" };
    expect(findBrowser(inputs({ ...everything, env }))).toEqual({ kind: "bundled", ...BUNDLED });
    expect(() =>
      findBrowser(inputs({ env: { ATROPOS_EDGE_BROWSER: "system" }, bundled: true })),
    ).toThrow(MISSING_BROWSER);
    expect(() => findBrowser(inputs({ env: { ATROPOS_EDGE_BROWSER: "firefox" } }))).toThrow(
      "ATROPOS_EDGE_BROWSER must be 'bundled' or 'system', not 'firefox'",
    );
  });

  it("fails with one line saying what to install when there is no browser", () => {
    expect(() => findBrowser(inputs({ bundled: false }))).toThrow(MISSING_BROWSER);
    expect(MISSING_BROWSER).not.toContain("\n");
    expect(MISSING_BROWSER).toMatch(/npm ci.*@sparticuz\/chromium.*apt-get install chromium/);
    expect(() => findBrowser(inputs({ env: { CHROMIUM_PATH: "/nope" } }))).toThrow(
      "CHROMIUM_PATH=/nope does not exist",
    );
  });

  it("unpacks the package's tar archives (files, directories, modes)", () => {
    const src = mkdtempSync(join(tmpdir(), "untar-src-"));
    mkdirSync(join(src, "lib"));
    writeFileSync(join(src, "lib", "libx.so"), "x".repeat(700), { mode: 0o755 });
    writeFileSync(join(src, "fonts.conf"), "<fontconfig/>");
    const archive = execFileSync("tar", ["-cf", "-", "-C", src, "lib", "fonts.conf"]);
    const out = mkdtempSync(join(tmpdir(), "untar-out-"));
    untar(archive, out);
    expect(readFileSync(join(out, "lib", "libx.so"), "utf8")).toBe("x".repeat(700));
    expect(statSync(join(out, "lib", "libx.so")).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(out, "fonts.conf"), "utf8")).toBe("<fontconfig/>");
  });
});
