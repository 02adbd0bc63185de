/**
 * Vitest global setup: every temporary directory a test run makes (state dirs of dev servers,
 * projects made by `init`, tokenizer caches…) goes under one directory of its own, removed when
 * the run ends, so repeated runs do not fill the machine's tmpdir. `os.tmpdir()` reads TMPDIR,
 * and test workers and the processes they start inherit it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export default function setup(): () => void {
  const previous = process.env.TMPDIR;
  const scratch = mkdtempSync(join(tmpdir(), "atropos-edge-tests-"));
  process.env.TMPDIR = scratch;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    rmSync(scratch, { recursive: true, force: true });
  };
}
