/**
 * atropos-edge as a package in someone else's project: pack, init (the packed CLI), an offline
 * install, a brand-new env, the project's own tests on the Workers pool, its npm run dev, three
 * leased and acked batches on the simulator, its npm start, and a dry-run deploy (scripts/newcomer.ts, also `npm run bench:newcomer`).
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

    // init ran from the packed package and still wrote the lockfile the offline install needs.
    expect(plain(phase("init").stdout)).toContain("package-lock.json pins the versions");
    // The scaffold's tests and the newcomer's own test ran inside workerd.
    expect(plain(phase("test").stdout)).toMatch(/Test Files\s+2 passed/);
    // …and the scaffold's end-to-end helper test in Node (the env against the simulator).
    expect(plain(phase("test").stdout)).toContain("test/node/addition.e2e.test.ts");
    // Three batches were leased, trained on and acked (one policy version each).
    expect(run.summary.policy_versions.announced).toBeGreaterThanOrEqual(3);
    expect(run.summary.envs.palindrome?.steps.length).toBeGreaterThanOrEqual(3);
    expect(plain(phase("start").stdout)).not.toMatch(/exports no simulate/);
    // npm run dev: Atropos' root, the shipped dashboard, and the project's own envs registered
    // (an env worker starts for palindrome; an env the Worker lacks is refused); stopped cleanly.
    expect(run.dev.root).toEqual({ status: 200, body: { message: "AtroposLib API" } });
    expect(run.dev.dashboard.status).toBe(200);
    expect(run.dev.dashboard.contentType).toContain("text/html");
    expect(run.dev.ownEnv.status).toBe(200);
    expect(run.dev.ownEnv.body).toMatchObject({ env: "palindrome", run: "newcomer-dev" });
    expect(run.dev.unknownEnv.status).toBe(422);
    expect(JSON.stringify(run.dev.unknownEnv.body)).toContain("unknown env");
    expect(run.dev.stopped).toBe(true);
    // The tool env of docs/WRITING_ENVS.md compiled (npm test above) and ran its tool loop.
    expect(plain(phase("tool-env").stdout)).toMatch(/wrote 2\/2 groups .*0 failures/);
    // The scaffold's own npm start (its example env) trains a step.
    expect(plain(phase("npm-start").stdout)).toMatch(/steps trained\s+1\/1/);
    // On the Worker's queue path too: the env by path, bundled into the Worker start serves.
    expect(plain(phase("workers").stdout)).toMatch(/steps trained\s+2\/2/);
    expect(plain(phase("workers").stdout)).toMatch(/palindrome on the Worker's queue path/);
    // The deploy bundle is the project's Worker with both of its envs registered.
    expect(run.bundle).toContain('"palindrome"');
    expect(run.bundle).toContain('"addition"');
  }, 900_000);
});
