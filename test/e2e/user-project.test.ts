/**
 * atropos-edge as a package in someone else's project: pack, init, an offline install, a
 * brand-new env, the project's own tests on the Workers pool, three leased and acked batches on
 * the simulator, and a dry-run deploy (scripts/newcomer.ts, also `npm run bench:newcomer`).
 */
import { stripVTControlCharacters } from "node:util";
import { describe, expect, it } from "vitest";
import { runNewcomerPath } from "../../scripts/newcomer";

describe("a user project made by init", () => {
  it("installs offline, runs its own env and tests, trains 3 steps and deploys dry-run", async () => {
    const run = await runNewcomerPath({ steps: 3 });
    const phase = (name: string) => run.phases.find((p) => p.name === name)!.result;
    // vitest and the CLI colour their output even when piped; compare the plain text.
    const plain = stripVTControlCharacters;

    // The scaffold's tests and the newcomer's own test ran inside workerd.
    expect(plain(phase("test").stdout)).toMatch(/Test Files\s+2 passed/);
    // Three batches were leased, trained on and acked (one policy version each).
    expect(run.summary.policy_versions.announced).toBeGreaterThanOrEqual(3);
    expect(run.summary.envs.palindrome?.steps.length).toBeGreaterThanOrEqual(3);
    expect(plain(phase("start").stdout)).not.toMatch(/exports no simulate/);
    // On the Worker's queue path too: the env by path, bundled into the Worker start serves.
    expect(plain(phase("workers").stdout)).toMatch(/steps trained\s+2\/2/);
    expect(plain(phase("workers").stdout)).toMatch(/palindrome on the Worker's queue path/);
    // The deploy bundle is the project's Worker with both of its envs registered.
    expect(run.bundle).toContain('"palindrome"');
    expect(run.bundle).toContain('"addition"');
  }, 900_000);
});
