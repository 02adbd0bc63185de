#!/usr/bin/env node
/**
 * `npm run deploy [-- --dry-run] [--tokenizers-only] [--outdir DIR] [--size-limit-mb 10]
 *                  [--config wrangler.jsonc]`
 *
 * The deploy of this repository and of every project `atropos-edge init` makes (its package.json
 * runs node_modules/atropos-edge/scripts/deploy.mjs): the project is the current directory (npm
 * runs scripts there), its wrangler config and its wrangler.
 *
 * Real deploy: checks that wrangler is logged in and that the wrangler config names a real D1
 * database, builds the bundle and checks its size, applies the D1 migrations remotely
 * (`wrangler d1 migrations apply DB --remote`), uploads the bundled tokenizers that the PAYLOADS
 * R2 bucket lacks (tokenizers/<family>/; scripts/tokenizers-r2.mjs), then runs `wrangler deploy`.
 *
 * --tokenizers-only: only that upload (after the login check).
 *
 * --dry-run: touches nothing remote, with or without credentials: only
 * `wrangler deploy --dry-run --outdir DIR` (a local build), a report of the bundle size (raw and
 * gzip) against the compressed Worker size limit, and what a real deploy would do, read from the
 * local config. Anything after `--` is passed to `wrangler deploy`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import {
  BUNDLED_DIR,
  bundledFamilies,
  seedWithWrangler,
  tokenizerObjects,
} from "./tokenizers-r2.mjs";

// The project being deployed: this repository, or a project made by init (npm runs its scripts
// in the project's directory).
const root = process.cwd();
const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The project's wrangler (a peer dependency), else the one next to this package. */
function findWrangler() {
  for (const base of [root, packageRoot]) {
    try {
      const pkg = createRequire(join(base, "package.json")).resolve("wrangler/package.json");
      return {
        bin: join(dirname(pkg), "bin", "wrangler.js"),
        module: createRequire(pkg).resolve("wrangler"),
      };
    } catch {
      // not installed there
    }
  }
  return null;
}
const wrangler = findWrangler();
const PLACEHOLDER_DATABASE_ID = "00000000-0000-0000-0000-000000000000";
const MB = 1024 * 1024;

function fail(message) {
  process.stderr.write(`\ndeploy: ${message}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const dashDash = argv.indexOf("--");
  const own = dashDash >= 0 ? argv.slice(0, dashDash) : argv;
  const passthrough = dashDash >= 0 ? argv.slice(dashDash + 1) : [];
  const options = {
    dryRun: false,
    tokenizersOnly: false,
    outdir: undefined,
    sizeLimitMb: 10,
    config: join(
      root,
      ["wrangler.jsonc", "wrangler.json", "wrangler.toml"].find((f) => existsSync(join(root, f))) ??
        "wrangler.jsonc",
    ),
    passthrough,
  };
  for (let i = 0; i < own.length; i++) {
    const [flag, inline] = own[i].split(/=(.*)/s, 2);
    const value = () => {
      const v = inline ?? own[++i];
      if (v === undefined || v === "") fail(`${flag} needs a value`);
      return v;
    };
    if (flag === "--dry-run") options.dryRun = true;
    else if (flag === "--tokenizers-only") options.tokenizersOnly = true;
    else if (flag === "--outdir") options.outdir = resolve(value());
    else if (flag === "--config" || flag === "-c") options.config = resolve(value());
    else if (flag === "--size-limit-mb") {
      options.sizeLimitMb = Number(value());
      if (!(options.sizeLimitMb > 0)) fail("--size-limit-mb must be a positive number");
    } else if (flag === "--help" || flag === "-h") {
      process.stdout.write(
        [
          "usage: npm run deploy -- [--dry-run] [--tokenizers-only] [--outdir DIR] [--size-limit-mb N] [--config FILE] [-- WRANGLER_DEPLOY_ARGS]",
          "  --dry-run          build only (nothing remote, even with a token set); report the bundle size and the plan",
          "  --tokenizers-only  only upload the bundled tokenizers the R2 bucket lacks",
          "  --outdir DIR       keep the built bundle in DIR (default: a temp dir, removed)",
          "  --size-limit-mb N  compressed Worker size limit (default 10 = Workers Paid; Free is 3)",
          "  --config FILE      wrangler config (default: wrangler.jsonc)",
          "",
        ].join("\n"),
      );
      process.exit(0);
    } else fail(`unknown option ${flag} (see --help)`);
  }
  return options;
}

// Offline-friendly and quiet: no telemetry, no error reports, no Request.cf download.
const wranglerEnv = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  WRANGLER_SEND_ERROR_REPORTS: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
};

function runWrangler(args, { capture = false } = {}) {
  if (!wrangler) fail("wrangler is not installed here; run npm install");
  const result = spawnSync(process.execPath, [wrangler.bin, ...args], {
    cwd: root,
    env: capture ? { ...wranglerEnv, CI: "true" } : wranglerEnv,
    stdio: capture ? ["ignore", "pipe", "pipe"] : "inherit",
    encoding: "utf8",
  });
  if (result.error) fail(`could not run wrangler (${result.error.message}); run npm install`);
  return result;
}

const formatSize = (bytes) => `${(bytes / MB).toFixed(2)} MiB`;

/** Sizes of the modules wrangler would upload (source maps and the README are not uploaded). */
function measureBundle(outdir) {
  const modules = readdirSync(outdir).filter((f) => !f.endsWith(".map") && f !== "README.md");
  let raw = 0;
  let gzip = 0;
  for (const file of modules) {
    const path = join(outdir, file);
    if (!statSync(path).isFile()) continue;
    const bytes = readFileSync(path);
    raw += bytes.length;
    gzip += gzipSync(bytes).length;
  }
  return { modules, raw, gzip };
}

function build(options) {
  const outdir = options.outdir ?? mkdtempSync(join(tmpdir(), "atropos-edge-bundle-"));
  process.stdout.write(`building the Worker bundle (wrangler deploy --dry-run) → ${outdir}\n`);
  const result = runWrangler(
    ["deploy", "--dry-run", "--outdir", outdir, "--config", options.config, ...options.passthrough],
    { capture: true },
  );
  const output = `${result.stdout}${result.stderr}`;
  if (result.status !== 0) {
    process.stderr.write(output);
    fail("the dry-run build failed (see wrangler's output above)");
  }
  const size = measureBundle(outdir);
  if (!size.modules.includes("index.js")) fail(`no index.js in ${outdir}; wrangler wrote nothing?`);
  const limit = options.sizeLimitMb * MB;
  const wranglerLine = output.match(/Total Upload:[^\n]*/)?.[0];
  process.stdout.write(
    [
      `bundle    ${size.modules.join(", ")}`,
      `raw       ${formatSize(size.raw)}`,
      `gzip      ${formatSize(size.gzip)} of the ${options.sizeLimitMb} MiB compressed Worker limit (${((100 * size.gzip) / limit).toFixed(0)}%)`,
      ...(wranglerLine ? [`wrangler  ${wranglerLine.trim()}`] : []),
      "",
    ].join("\n"),
  );
  const over = size.gzip > limit;
  if (over) {
    process.stderr.write(
      `\nWARNING: the compressed bundle (${formatSize(size.gzip)}) is over the ${options.sizeLimitMb} MiB Worker size limit; Cloudflare will reject the upload. Drop an env from the envs your Worker registers, or split the env workers into a second Worker.\n`,
    );
  }
  return {
    outdir,
    size,
    over,
    cleanup: () => options.outdir || rmSync(outdir, { recursive: true, force: true }),
  };
}

function checkLogin() {
  const who = runWrangler(["whoami", "--json"], { capture: true });
  let state = null;
  try {
    state = JSON.parse(who.stdout.trim());
  } catch {
    // not JSON: a network or config error, reported below
  }
  if (state && state.loggedIn === false) {
    fail(
      "wrangler is not logged in. Run `npx wrangler login` (browser), or set CLOUDFLARE_API_TOKEN " +
        "(and CLOUDFLARE_ACCOUNT_ID if the token sees several accounts), then run `npm run deploy` again.",
    );
  }
  if (who.status !== 0 || !state) {
    process.stderr.write(`${who.stdout}${who.stderr}`);
    fail(
      "could not check the Cloudflare login (see above). Deploying needs access to api.cloudflare.com; " +
        "`npm run deploy -- --dry-run` works offline.",
    );
  }
  const account = state.accounts?.[0]?.name ?? state.email ?? "your account";
  process.stdout.write(`logged in to Cloudflare (${account})\n`);
}

async function readConfig(configPath) {
  const { unstable_readConfig } = await import(wrangler.module);
  return unstable_readConfig({ config: configPath });
}

function checkDatabaseId(config, configPath) {
  const db = config.d1_databases?.find((d) => d.binding === "DB");
  if (db?.database_id === PLACEHOLDER_DATABASE_ID) {
    fail(
      `${configPath} still has the placeholder D1 database_id. Create the database with ` +
        `\`npx wrangler d1 create ${db.database_name}\` and put the id it prints into d1_databases[0].database_id ` +
        "(see docs/DEPLOY.md).",
    );
  }
}

/**
 * What `npm run deploy` would do, from the local config alone (the dry run's report: no remote
 * call, so whether the bucket already has a tokenizer is not known here).
 */
function deployPlan(config, configPath) {
  const db = config.d1_databases?.find((d) => d.binding === "DB");
  const bucket = config.r2_buckets?.find((b) => b.binding === "PAYLOADS");
  const queues = (config.queues?.producers ?? []).map((q) => q.queue);
  const families = bundledFamilies();
  const tokenizerBytes = families
    .flatMap((family) => tokenizerObjects(family, BUNDLED_DIR))
    .reduce((sum, o) => sum + o.body.length, 0);
  const lines = [
    "a real deploy (`npm run deploy`) would:",
    "  1. check the Cloudflare login (wrangler whoami)",
    db
      ? `  2. apply the D1 migrations to database ${db.database_name} (remote)${db.database_id === PLACEHOLDER_DATABASE_ID ? ` — not yet: ${configPath} has the placeholder database_id, a real deploy stops here` : ""}`
      : "  2. (no D1 binding DB in the config: a real deploy cannot apply the migrations)",
    bucket
      ? `  3. upload the bundled tokenizers R2 bucket ${bucket.bucket_name} lacks: up to ${families.length} (${families.join(", ")}), ${formatSize(tokenizerBytes)} brotli; those already there are skipped`
      : "  3. (no PAYLOADS R2 bucket in the config: no tokenizer upload)",
    `  4. wrangler deploy: Worker ${config.name ?? "(unnamed)"} with this bundle${queues.length ? `; queues ${queues.join(", ")} must exist` : ""}`,
  ];
  return lines;
}

/**
 * Bundled tokenizer families into the account's PAYLOADS bucket when missing or stale (a Worker
 * reads them from tokenizers/<family>/; about 12 MB for all seven, brotli).
 */
async function uploadTokenizers(configPath) {
  const config = await readConfig(configPath);
  const bucket = config.r2_buckets?.find((b) => b.binding === "PAYLOADS");
  if (!bucket) {
    process.stdout.write(
      `no PAYLOADS R2 bucket in ${configPath}: bundled tokenizers not uploaded\n`,
    );
    return;
  }
  process.stdout.write(`\nchecking the bundled tokenizers in R2 bucket ${bucket.bucket_name}…\n`);
  try {
    const uploaded = seedWithWrangler(
      (args) => runWrangler([...args, "--config", configPath], { capture: true }),
      bucket.bucket_name,
      { log: (line) => process.stdout.write(`${line}\n`) },
    );
    process.stdout.write(
      uploaded.length > 0
        ? `uploaded tokenizers: ${uploaded.join(", ")}\n`
        : "all bundled tokenizers are already there\n",
    );
  } catch (error) {
    fail(
      `${error instanceof Error ? error.message : error}. The R2 bucket must exist first ` +
        "(docs/DEPLOY.md, step 2) and your token needs R2 edit rights.",
    );
  }
}

const options = parseArgs(process.argv.slice(2));
if (options.dryRun) {
  const built = build(options);
  built.cleanup();
  process.stdout.write(
    `${deployPlan(await readConfig(options.config), options.config).join("\n")}\n`,
  );
  process.stdout.write(
    `dry run done: nothing remote was touched, nothing was uploaded${options.outdir ? `; bundle kept in ${options.outdir}` : ""}.\n`,
  );
  process.exit(0);
}

checkLogin();
if (options.tokenizersOnly) {
  await uploadTokenizers(options.config);
  process.exit(0);
}
checkDatabaseId(await readConfig(options.config), options.config);
const built = build(options);
built.cleanup();
if (built.over) fail("not deploying a bundle over the size limit (see the warning above)");

process.stdout.write("\napplying D1 migrations to the remote database…\n");
const migrate = runWrangler([
  "d1",
  "migrations",
  "apply",
  "DB",
  "--remote",
  "--config",
  options.config,
]);
if (migrate.status !== 0) {
  fail(
    "applying the D1 migrations remotely failed (see above); nothing was deployed. Check the " +
      "database_id in wrangler.jsonc and that your token has D1 edit rights.",
  );
}

await uploadTokenizers(options.config);

process.stdout.write("\ndeploying the Worker…\n");
const deploy = runWrangler(["deploy", "--config", options.config, ...options.passthrough]);
if (deploy.status !== 0) {
  fail(
    "wrangler deploy failed (see above). The R2 bucket and both queues must exist first " +
      "(docs/DEPLOY.md, steps 2–3); the migrations that were applied stay applied.",
  );
}
process.stdout.write(
  "\ndeployed. Set the API token once with `npx wrangler secret put API_TOKEN`, then smoke-test " +
    "with `curl -u user:$API_TOKEN https://<your-worker>/status` (docs/DEPLOY.md).\n",
);
