/**
 * `atropos-edge init DIR`: scaffolds a user project (package.json, wrangler config with every
 * binding, a Worker entry registering an example env, a test on the Workers pool, a README) from
 * templates/project. Dev dependencies are pinned to the versions this package is built and
 * tested with.
 */

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { PROJECT_ROOT } from "./dev-process";
import { type Lockfile, projectLockfile } from "./project-lock";

/** Tooling a user project needs, taken at this package's own pinned versions. */
const PROJECT_DEV_DEPENDENCIES = [
  "@cloudflare/vitest-pool-workers",
  "@cloudflare/workers-types",
  "@types/node",
  "typescript",
  "vitest",
  "wrangler",
] as const;

export interface InitOptions {
  dir: string;
  /** Project name (wrangler name, D1/R2/queue names); default: the directory's name. */
  name?: string;
  /** What package.json depends on: a version range, or a tarball/path for local installs. */
  atroposEdgeSpec?: string;
  force?: boolean;
  log?: (line: string) => void;
}

interface PackageJson {
  version: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

function ownPackage(): PackageJson {
  return JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as PackageJson;
}

/** Lower-case letters, digits and dashes: what wrangler accepts as a Worker/D1/queue name. */
export function projectName(raw: string): string {
  const name = raw
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 54);
  if (!name) throw new Error(`cannot make a project name from '${raw}': pass --name my-project`);
  return name;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/**
 * Run from a git checkout, atropos-edge is a version npm's registry may not have: pack the
 * checkout into the project's vendor/ and depend on that file (relative, so the project stays
 * portable and installs offline).
 */
export function vendorCheckout(target: string, root: string = PROJECT_ROOT): string | null {
  if (!existsSync(join(root, ".git"))) return null;
  const vendor = join(target, "vendor");
  mkdirSync(vendor, { recursive: true });
  const out = execFileSync("npm", ["pack", "--silent", "--pack-destination", vendor], {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const file = out.trim().split("\n").at(-1)?.trim();
  if (!file || !existsSync(join(vendor, file))) {
    throw new Error(`npm pack in ${root} did not produce a tarball (printed: ${out.trim()})`);
  }
  return `file:vendor/${file}`;
}

export function runInit(options: InitOptions): number {
  const log = options.log ?? ((line: string) => console.log(line));
  const target = resolve(options.dir);
  if (existsSync(target) && readdirSync(target).length > 0 && !options.force) {
    throw new Error(`${target} is not empty; pick a new directory or pass --force`);
  }
  const own = ownPackage();
  const name = projectName(options.name ?? basename(target));
  const pinned = { ...own.dependencies, ...own.peerDependencies, ...own.devDependencies };
  const devDependencies = Object.fromEntries(
    PROJECT_DEV_DEPENDENCIES.map((dep) => {
      const version = pinned[dep];
      if (!version) throw new Error(`atropos-edge's package.json does not pin ${dep}`);
      return [dep, version];
    }),
  );
  const templates = join(PROJECT_ROOT, "templates", "project");
  cpSync(templates, target, { recursive: true });
  // Only the template's own files are filled in (never the packed tarball below).
  const templated = filesUnder(target);
  let spec = options.atroposEdgeSpec;
  if (spec === undefined) {
    const vendored = vendorCheckout(target);
    if (vendored) {
      log(
        `atropos-edge runs from a checkout: packed it into ${vendored.slice(5)} (commit it with the project)`,
      );
    }
    spec = vendored ?? own.version;
  }
  const values: Record<string, string> = { name, atroposEdgeSpec: spec };
  for (const file of templated) {
    const text = readFileSync(file, "utf8");
    writeFileSync(
      file,
      text.replace(/\{\{(\w+)\}\}/g, (match, key: string) => values[key] ?? match),
    );
  }
  // npm drops files named .gitignore from published packages, so the template has no dot.
  renameSync(join(target, "gitignore"), join(target, ".gitignore"));
  const manifestPath = join(target, "package.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as PackageJson;
  manifest.devDependencies = devDependencies;
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  if (writeLockfile(target, name, spec, own.version, devDependencies)) {
    log("package-lock.json pins the versions atropos-edge is tested with");
  } else {
    log("no package-lock.json: this atropos-edge ships no lockfile, npm resolves the versions");
  }
  const shown = relative(process.cwd(), target) || ".";
  log(`created ${name} in ${shown}`);
  log("next:");
  log(`  cd ${shown}`);
  log("  npm install");
  log("  npm test        # your env's tests inside workerd");
  log("  npm start       # API + your env + simulator + demo trainer");
  return 0;
}

/**
 * atropos-edge's own lockfile: a checkout's package-lock.json, or in an installed package the
 * copy `npm pack` ships (scripts/pack-lock.mjs; npm never packs package-lock.json itself).
 */
export function ownLockfilePath(root: string = PROJECT_ROOT): string | null {
  const candidates = [
    join(root, "package-lock.json"),
    join(root, "templates", "atropos-edge.lock.json"),
  ];
  return candidates.find((path) => existsSync(path)) ?? null;
}

/**
 * Writes package-lock.json from atropos-edge's own lockfile (absent only from a package packed
 * without its prepack script). A tarball spec gets its integrity, so the whole install can come
 * from the npm cache.
 */
function writeLockfile(
  target: string,
  name: string,
  spec: string,
  version: string,
  devDependencies: Record<string, string>,
): boolean {
  const ownLock = ownLockfilePath();
  if (!ownLock) return false;
  const source = JSON.parse(readFileSync(ownLock, "utf8")) as Lockfile;
  const tarball = spec.startsWith("file:") ? resolve(target, spec.slice(5)) : null;
  const atroposEdge =
    tarball?.endsWith(".tgz") && existsSync(tarball)
      ? {
          version,
          resolved: `file:${relative(target, tarball)}`,
          integrity: `sha512-${createHash("sha512").update(readFileSync(tarball)).digest("base64")}`,
        }
      : { version };
  const lock = projectLockfile({
    source,
    project: { name, version: "0.0.0" },
    atroposEdge,
    atroposEdgeSpec: spec,
    devDependencies,
  });
  writeFileSync(join(target, "package-lock.json"), `${JSON.stringify(lock, null, 2)}\n`);
  return true;
}
