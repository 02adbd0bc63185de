/**
 * The state directory of one `start`: --persist-to DIR (created when missing, kept), or a fresh
 * directory under the project's .wrangler/ that is removed at exit.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";

export interface StateDir {
  dir: string;
  /** Removes a fresh directory; a --persist-to one stays. */
  release(): void;
}

export function openStateDir(persistTo: string | undefined, projectRoot: string): StateDir {
  if (persistTo) {
    const dir = resolve(persistTo);
    // wrangler and the toy policy's weights write below it: a new DIR is created, not an ENOENT.
    mkdirSync(dir, { recursive: true });
    return { dir, release: () => {} };
  }
  mkdirSync(join(projectRoot, ".wrangler"), { recursive: true });
  const dir = mkdtempSync(join(projectRoot, ".wrangler", "start-"));
  return { dir, release: () => rmSync(dir, { recursive: true, force: true }) };
}
