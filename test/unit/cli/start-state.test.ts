import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openStateDir } from "../../../src/cli/start-state";

const scratch = mkdtempSync(join(tmpdir(), "start-state-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("start's state directory", () => {
  it("creates a --persist-to directory that does not exist yet, and keeps it", () => {
    const wanted = join(scratch, "runs", "first");
    const state = openStateDir(wanted, scratch);
    expect(state.dir).toBe(wanted);
    expect(statSync(wanted).isDirectory()).toBe(true);
    state.release();
    expect(existsSync(wanted)).toBe(true);
  });

  it("without --persist-to, a fresh directory under .wrangler/ removed at release", () => {
    const state = openStateDir(undefined, scratch);
    expect(state.dir.startsWith(join(scratch, ".wrangler", "start-"))).toBe(true);
    expect(existsSync(state.dir)).toBe(true);
    state.release();
    expect(existsSync(state.dir)).toBe(false);
  });
});
