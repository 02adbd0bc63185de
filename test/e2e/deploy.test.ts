/**
 * `npm run deploy`: the offline dry run builds the real Worker bundle and reports its size; a
 * real deploy without a Cloudflare login stops with instructions before touching anything remote.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT } from "./harness";

const DEPLOY = join(ROOT, "scripts", "deploy.mjs");
const scratch = mkdtempSync(join(tmpdir(), "atropos-edge-deploy-test-"));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runDeploy(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [DEPLOY, ...args], {
      cwd: ROOT,
      env,
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
    const result = await runDeploy(["--dry-run", "--outdir", outdir]);
    expect(result.code, result.stdout + result.stderr).toBe(0);

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
    expect(result.stdout).toContain("nothing was uploaded");
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

  it("rejects an unknown option", async () => {
    const result = await runDeploy(["--dryrun"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("unknown option --dryrun");
  });
});
