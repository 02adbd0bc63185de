/**
 * The scaffold `init` writes, run as a user would, against this checkout (node_modules linked,
 * no install): its end-to-end helper test (runOnSimulator in test/node/), and the README telling
 * a newcomer what `npm start` runs and how to run their own env.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stripVTControlCharacters } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runInit } from "../../src/cli/init-command";
import { ROOT } from "./harness";

const scratch = mkdtempSync(join(tmpdir(), "atropos-edge-template-"));
const project = join(scratch, "first-hour");

function run(cmd: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: project, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => {
      output += String(d);
    });
    child.stderr.on("data", (d) => {
      output += String(d);
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 150_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output: stripVTControlCharacters(output) });
    });
  });
}

beforeAll(() => {
  runInit({ dir: project, name: "first-hour", atroposEdgeSpec: "0.1.0", log: () => {} });
  // As npm install would lay it out: the package and this checkout's dependencies.
  mkdirSync(join(project, "node_modules"));
  for (const entry of readdirSync(join(ROOT, "node_modules"))) {
    symlinkSync(join(ROOT, "node_modules", entry), join(project, "node_modules", entry));
  }
  symlinkSync(ROOT, join(project, "node_modules", "atropos-edge"), "dir");
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("a project made by init", () => {
  it("has an end-to-end helper test that runs the env against the simulator", async () => {
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    // npm test runs it after the workerd tests.
    expect(manifest.scripts.test).toContain("vitest run --config vitest.node.config.ts");
    const result = await run(process.execPath, [
      join(ROOT, "node_modules", "vitest", "vitest.mjs"),
      "run",
      "--config",
      "vitest.node.config.ts",
    ]);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain("test/node/addition.e2e.test.ts");
    expect(result.output).toMatch(/Tests\s+1 passed/);
  }, 180_000);

  it("README says npm start runs addition, and how to run your own env", () => {
    const readme = readFileSync(join(project, "README.md"), "utf8");
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(manifest.scripts.start).toBe("atropos-edge start --env ./src/envs/addition.ts");
    expect(readme).toMatch(/npm start` is `atropos-edge start --env \.\/src\/envs\/addition\.ts`/);
    expect(readme).toContain("npx atropos-edge start --env ./src/envs/my-env.ts");
    expect(readme).toContain("test/node/");
    expect(readme).toContain("runOnSimulator");
  });
});
