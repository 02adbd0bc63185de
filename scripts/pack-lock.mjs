/**
 * npm never packs package-lock.json, yet `atropos-edge init` cuts the new project's lockfile (the
 * versions this package is tested with, installable from the npm cache alone) out of it. `npm
 * pack` / `npm publish` run this as prepack: the lockfile's packages go into the package as
 * templates/atropos-edge.lock.json; postpack (`--clean`) removes the copy again.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const shipped = join(root, "templates", "atropos-edge.lock.json");

if (process.argv.includes("--clean")) {
  rmSync(shipped, { force: true });
} else {
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
  writeFileSync(shipped, `${JSON.stringify(lock)}\n`);
}
