/**
 * `npm run deploy`: the dry run builds the real Worker bundle and reports its size and plan with
 * no network at all (a network namespace, a token in the environment), here and in a project
 * made by init; a real deploy without a Cloudflare login stops with instructions before touching
 * anything remote.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runInit } from "../../src/cli/init-command";
import { ROOT } from "./harness";

const DEPLOY = join(ROOT, "scripts", "deploy.mjs");
const scratch = mkdtempSync(join(tmpdir(), "atropos-edge-deploy-test-"));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `unshare -rn` (a user + network namespace: no interface but a down loopback) where the kernel
 * allows it; elsewhere every proxy variable points at a closed port, so a request still fails.
 */
const NETNS = spawnSync("unshare", ["-rn", "true"]).status === 0;
const OFFLINE_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  // A dry run must not use these: a real-looking token, and an account.
  CLOUDFLARE_API_TOKEN: "dry-run-must-not-use-this-token",
  CLOUDFLARE_ACCOUNT_ID: "0123456789abcdef0123456789abcdef",
  ...(NETNS
    ? {}
    : { HTTPS_PROXY: "http://127.0.0.1:9", HTTP_PROXY: "http://127.0.0.1:9", NO_PROXY: "" }),
};

function spawnOffline(cmd: string, args: string[]): [string, string[]] {
  return NETNS ? ["unshare", ["-rn", cmd, ...args]] : [cmd, args];
}

function runDeploy(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  { cwd = ROOT, offline = false, npm = false } = {},
): Promise<Result> {
  return new Promise((resolve) => {
    const direct: [string, string[]] = npm
      ? ["npm", ["run", "--silent", "deploy", "--", ...args]]
      : [process.execPath, [DEPLOY, ...args]];
    const [cmd, argv] = offline ? spawnOffline(...direct) : direct;
    const child = spawn(cmd, argv, {
      cwd,
      env: offline ? OFFLINE_ENV : env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += String(d);
    });
    child.stderr.on("data", (d) => {
      stderr += String(d);
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const MiB = 1024 * 1024;

describe("scripts/deploy.mjs", () => {
  it("--dry-run builds the Worker offline with every Durable Object class exported", async () => {
    const outdir = join(scratch, "bundle");
    const result = await runDeploy(["--dry-run", "--outdir", outdir], process.env, {
      offline: true,
    });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    // What a real deploy would do, from the local config.
    expect(result.stdout).toContain("a real deploy (`npm run deploy`) would:");
    expect(result.stdout).toMatch(/apply the D1 migrations to database atropos-edge \(remote\)/);
    expect(result.stdout).toMatch(
      /upload the bundled tokenizers R2 bucket atropos-edge-payloads lacks: up to 7 .*MiB brotli/,
    );
    expect(result.stdout).toMatch(/wrangler deploy: Worker atropos-edge/);

    const bundle = readFileSync(join(outdir, "index.js"), "utf8");
    const exported = bundle.match(/export\s*\{([^}]*)\}\s*;?\s*(?:\/\/#[^\n]*\s*)?$/)?.[1] ?? "";
    // `local as Exported` (the entry destructures the factory's classes) or a plain name.
    const names = exported.split(",").map(
      (s) =>
        s
          .trim()
          .split(/\s+as\s+/)
          .at(-1)!,
    );
    for (const cls of ["RunCoordinator", "EnvSession", "EnvFeeder"]) {
      expect(names).toContain(cls);
      // esbuild writes `var X = class extends DurableObject`; a failed match must not print 18 MB.
      const defined = new RegExp(`(?:class ${cls}|${cls} = class) extends DurableObject`).test(
        bundle,
      );
      expect(defined, `${cls} is defined as a DurableObject class`).toBe(true);
    }
    expect(names).toContain("default");
    // The default export carries both handlers the platform calls.
    expect(/fetch:[^\n]*app\.fetch/.test(bundle), "default export has fetch").toBe(true);
    expect(/queue:[^}]*handleQueueBatch/.test(bundle), "default export has queue").toBe(true);

    const raw = Number(result.stdout.match(/raw\s+([\d.]+) MiB/)?.[1]);
    const gzip = Number(result.stdout.match(/gzip\s+([\d.]+) MiB of the 10 MiB/)?.[1]);
    const bundleBytes = Buffer.byteLength(bundle);
    expect(Math.abs(raw * MiB - bundleBytes)).toBeLessThan(0.01 * MiB);
    expect(gzip).toBeGreaterThan(0);
    expect(gzip).toBeLessThan(raw);
    // No tokenizer in the script (Workers read them from R2): it fits even the Free plan's 3 MiB.
    expect(gzip).toBeLessThan(3);
    expect(result.stderr).not.toContain("WARNING");
    expect(result.stdout).toContain("nothing remote was touched, nothing was uploaded");
    console.log(`bundle: raw ${raw} MiB, gzip ${gzip} MiB`);
  });

  it("warns clearly when the compressed bundle is over the size limit", async () => {
    // The bundle carries no tokenizer (Workers read them from R2): about 0.3 MiB compressed.
    const result = await runDeploy(["--dry-run", "--size-limit-mb", "0.1"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(
      /WARNING: the compressed bundle \([\d.]+ MiB\) is over the 0.1 MiB/,
    );
  });

  it("refuses to deploy without a Cloudflare login, before any remote step", async () => {
    const home = mkdtempSync(join(scratch, "home-"));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: home,
      XDG_CONFIG_HOME: join(home, ".config"),
    };
    for (const key of [
      "CLOUDFLARE_API_TOKEN",
      "CLOUDFLARE_API_KEY",
      "CLOUDFLARE_EMAIL",
      "CF_API_TOKEN",
    ])
      delete env[key];
    const result = await runDeploy([], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("wrangler is not logged in");
    expect(result.stderr).toContain("npx wrangler login");
    expect(result.stdout).not.toContain("applying D1 migrations");
  });

  it("in a project made by init, `npm run deploy -- --dry-run` touches nothing remote either", async () => {
    const project = join(scratch, "made-by-init");
    runInit({ dir: project, name: "dry-project", atroposEdgeSpec: "0.1.0", log: () => {} });
    // The installed package and its peer wrangler, as npm install would place them.
    mkdirSync(join(project, "node_modules"));
    symlinkSync(ROOT, join(project, "node_modules", "atropos-edge"), "dir");
    symlinkSync(
      join(ROOT, "node_modules", "wrangler"),
      join(project, "node_modules", "wrangler"),
      "dir",
    );
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(manifest.scripts.deploy).toBe("node node_modules/atropos-edge/scripts/deploy.mjs");
    const outdir = join(scratch, "project-bundle");
    const result = await runDeploy(["--dry-run", "--outdir", outdir], process.env, {
      cwd: project,
      offline: true,
      npm: true,
    });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).not.toMatch(/uploading tokenizer/);
    expect(result.stdout).toMatch(/gzip\s+[\d.]+ MiB of the 10 MiB/);
    // The plan names the project's own resources, not the repository's.
    expect(result.stdout).toMatch(/database dry-project \(remote\) — not yet: .*placeholder/);
    expect(result.stdout).toContain("R2 bucket dry-project-payloads lacks");
    expect(result.stdout).toContain("wrangler deploy: Worker dry-project");
    expect(result.stdout).toContain("nothing remote was touched");
    // The project's Worker, with its example env, is what was built.
    expect(readFileSync(join(outdir, "index.js"), "utf8")).toContain('"addition"');
  });

  it("rejects an unknown option", async () => {
    const result = await runDeploy(["--dryrun"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("unknown option --dryrun");
  });
});
