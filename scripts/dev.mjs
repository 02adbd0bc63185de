#!/usr/bin/env node
/**
 * `npm run dev -- [--port 8787] [--ip 127.0.0.1] [--persist-to .wrangler/state] [--var NAME:value]…
 *                [--inspector-port N]`   (attach Chrome DevTools / a CPU profiler to the Worker)
 *                [--project DIR]          (a user project made by `atropos-edge init`; default: the
 *                                          current directory when it has a wrangler config, else
 *                                          this package)
 *                [--entry FILE]           (serve this Worker entry instead of the config's `main`)
 * `npm run dev -- --watch [same options] [-- other wrangler dev flags]`
 *
 * Worker settings come from wrangler.jsonc's vars, then `.dev.vars`, then the environment (the
 * documented vars and secrets: `API_TOKEN=… npm run dev`), then `--var`, each overriding the one
 * before. Without API_TOKEN the server answers everyone: it says so, loudly, on start.
 *
 * Applies the pending D1 migrations to the local state (scripts/local-migrations.mjs), then
 * serves the Worker (API, queues, DOs, dashboard) on workerd with local D1/R2/Queues/DOs persisted
 * across restarts. Works offline.
 *
 * Default: the Worker is bundled exactly as `wrangler deploy` would bundle it and served by one
 * Miniflare instance, configured from wrangler.jsonc. `wrangler dev` puts a proxy Worker, an
 * inspector connection and its Node process in front of every request (a no-op request costs
 * ~5 ms there against ~2 ms here, and its Node process burns CPU per request body), so this is
 * what benchmarks and `npm start` use. `--watch` runs `wrangler dev` instead, for live reload
 * while editing; both share the same state directory layout.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { applyLocalMigrations, migrationSettings } from "./local-migrations.mjs";
import { freePort, portIsFree } from "./ports.mjs";
import { seedBucket } from "./tokenizers-r2.mjs";

const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf(`--${name}`);
  if (i >= 0 && args[i + 1]) return args.splice(i, 2)[1];
  const eq = args.findIndex((a) => a.startsWith(`--${name}=`));
  if (eq >= 0) return args.splice(eq, 1)[0].slice(name.length + 3);
  return fallback;
}
function flag(name) {
  const i = args.indexOf(`--${name}`);
  if (i >= 0) args.splice(i, 1);
  return i >= 0;
}
const WRANGLER_CONFIGS = ["wrangler.jsonc", "wrangler.json", "wrangler.toml"];
const configIn = (dir) => WRANGLER_CONFIGS.map((f) => join(dir, f)).find((f) => existsSync(f));
const root = resolve(option("project", configIn(process.cwd()) ? process.cwd() : packageRoot));
const configPath = configIn(root);
if (!configPath) fail(`no wrangler.jsonc, wrangler.json or wrangler.toml in ${root}`);
const port = Number(option("port", process.env.PORT ?? "8787"));
const persistTo = resolve(option("persist-to", join(root, ".wrangler", "state")));
const ip = option("ip", "127.0.0.1");
const watch = flag("watch");
const entry = option("entry");
const inspectorPort = option("inspector-port");
const vars = { DEPLOYMENT: "local" };
// The Worker settings docs/DEPLOY.md documents, read from the environment too. DEPLOYMENT is not:
// a dev server is always "local".
const ENV_SETTINGS = [
  "API_TOKEN",
  "ALLOW_UNAUTHENTICATED",
  "INFERENCE_KEYS_SECRET",
  "GUARD_WEBHOOK_ALLOW_PRIVATE",
  "PROXY_SESSION_TTL_S",
  "RETENTION_HOURS",
  "CORS_ORIGINS",
  "MEMORY_BUDGET_MB",
  "FEEDER_TICK_MS",
  "PUBLIC_API_URL",
  "COMPAT_LEASE_SECONDS",
  "DEFAULT_LEASE_SECONDS",
  "MAX_BODY_BYTES",
  "MAX_INFLATED_BYTES",
  "MAX_JSON_BODY_BYTES",
  "MAX_LIST_GROUPS",
  "BODY_IDLE_TIMEOUT_MS",
  "ENV_STALE_SECONDS",
  "DEDUPE_WINDOW_SECONDS",
];
const fromEnvironment = ENV_SETTINGS.filter((name) => process.env[name]);
for (const name of fromEnvironment) vars[name] = process.env[name];
for (let v = option("var"); v !== undefined; v = option("var")) {
  const colon = v.indexOf(":");
  if (colon <= 0) fail(`--var expects NAME:value, got '${v}'`);
  vars[v.slice(0, colon)] = v.slice(colon + 1);
}
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port expects 0–65535`);

/**
 * Names (never values) of the settings taken from the environment, and a warning when the server
 * will answer without authentication (`apiToken`: the API_TOKEN it will have, if any).
 */
function announceAuth(apiToken) {
  if (fromEnvironment.length > 0) {
    process.stdout.write(`dev: settings from the environment: ${fromEnvironment.join(", ")}\n`);
  }
  if (apiToken) return;
  const where =
    ip === "127.0.0.1" || ip === "localhost" || ip === "::1" ? "this machine" : "the network";
  process.stderr.write(
    [
      "dev: WARNING: no API_TOKEN is set: this server answers every request WITHOUT AUTHENTICATION",
      `dev:   (anyone on ${where} who can reach port ${port} can read and change its runs and tokens).`,
      "dev:   Set one: API_TOKEN=<secret> npm run dev, a line API_TOKEN=<secret> in .dev.vars,",
      "dev:   or --var API_TOKEN:<secret>; then send 'Authorization: Bearer <secret>'.",
      "",
    ].join("\n"),
  );
}

/** Whether .dev.vars (dotenv format, read by wrangler) sets API_TOKEN. */
function devVarsSetToken() {
  const file = join(root, ".dev.vars");
  return existsSync(file) && /^\s*API_TOKEN\s*=\s*["']?\S/m.test(readFileSync(file, "utf8"));
}

/** wrangler children still running (the bundling): stopped when the start fails. */
const background = new Set();

function fail(message) {
  process.stderr.write(`dev: ${message}\n`);
  for (const child of background) child.kill("SIGTERM");
  process.exit(2);
}

const childEnv = {
  ...process.env,
  // Offline-friendly: no Request.cf download, no telemetry, no error reports.
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_SEND_METRICS: "false",
  WRANGLER_SEND_ERROR_REPORTS: "false",
  CI: process.env.CI ?? "true",
};
// The project's own wrangler (a user project has it as a dev dependency), else this package's.
function wranglerBin() {
  for (const from of [root, packageRoot]) {
    try {
      const pkg = createRequire(join(from, "package.json")).resolve("wrangler/package.json");
      return join(dirname(pkg), "bin", "wrangler.js");
    } catch {
      // not installed there
    }
  }
  fail("wrangler is not installed: run `npm install --save-dev wrangler` in your project");
}
const wrangler = wranglerBin();

/** Runs wrangler without blocking, so other start-up work overlaps with it. */
function runInBackground(argv, what) {
  return new Promise((done) => {
    const child = spawn(process.execPath, [wrangler, ...argv], {
      cwd: root,
      env: childEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    background.add(child);
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.on("close", (status) => {
      background.delete(child);
      if (status === 0) return done();
      process.stderr.write(output);
      process.stderr.write(`\n${what} failed (see above).\n`);
      process.exit(status ?? 1);
    });
  });
}

// Checked first: a port held by another server would otherwise fail deep inside workerd, after
// the migrations and the bundle, with a native stack trace.
if (port !== 0 && !(await portIsFree(port, ip))) {
  fail(
    `port ${port} on ${ip} is already in use (another dev server or \`npm start\`?); stop it or pass --port N`,
  );
}

// First thing, before the slow start-up, so it is not missed.
announceAuth(vars.API_TOKEN || devVarsSetToken());

if (watch) await serveWithWranglerDev();
else await serveWithMiniflare();

async function serveWithMiniflare() {
  const [
    { Miniflare, Log, LogLevel },
    { unstable_getMiniflareWorkerOptions, unstable_readConfig },
  ] = await Promise.all([import("miniflare"), import("wrangler")]);
  // Next to the state it serves: rebuilt on every start, and nothing is left behind in /tmp
  // when the server is killed.
  const bundleDir = join(persistTo, "bundle");
  rmSync(bundleDir, { recursive: true, force: true });
  process.stdout.write("dev: bundling the Worker (as wrangler deploy does)…\n");
  const config = unstable_readConfig({ config: configPath });
  const { workerOptions } = unstable_getMiniflareWorkerOptions(config);
  // The migrations and the tokenizer upload (seconds on a fresh state) overlap with the bundling.
  await Promise.all([
    runInBackground(
      ["deploy", ...(entry ? [resolve(entry)] : []), "--dry-run", "--outdir", bundleDir],
      "Bundling the Worker",
    ),
    prepareLocalState(Miniflare, config, workerOptions),
  ]);
  // wrangler names the bundle after the entry file.
  const script = readdirSync(bundleDir).find((f) => f.endsWith(".js"));
  if (!script) fail(`wrangler wrote no bundle into ${bundleDir}`);

  const bindings = { ...workerOptions.bindings, ...vars };
  const state = (kind) => join(persistTo, "v3", kind);
  // wrangler.jsonc routes every request to the Worker first (run_worker_first) and the Worker
  // serves /dashboard/* through its ASSETS binding. Locally the same behaviour without Miniflare's
  // asset-router hops in front of every API request (~1.5 ms and ~1 ms of CPU per request here):
  // the Worker is the entry, and its assets binding is a second, assets-only worker. Assets
  // without a binding keep Miniflare's asset router in front of the Worker, as on Cloudflare.
  const { assets, ...apiOptions } = workerOptions;
  const assetsBinding = assets?.directory && assets.binding;
  const mf = new Miniflare({
    workers: [
      {
        ...apiOptions,
        ...(assets && !assetsBinding ? { assets } : {}),
        serviceBindings: {
          ...apiOptions.serviceBindings,
          ...(assetsBinding ? { [assetsBinding]: "atropos-edge-assets" } : {}),
        },
        // The name keys Durable Object storage: the same as wrangler dev's, so state is shared.
        name: config.name,
        modules: true,
        scriptPath: join(bundleDir, script),
        modulesRoot: bundleDir,
        bindings,
        // Clients talk to the Worker itself. Miniflare's entry worker imitates Cloudflare's edge
        // but compresses differently: it gzips every JSON/text response for a client that accepts
        // gzip, small ones included (the edge skips responses marked no-transform), and passes
        // gzip on to clients that sent no Accept-Encoding (the edge decodes it for them). The
        // Worker's own rule is what the edge delivers (docs/COMPATIBILITY.md), so it is served
        // as is; this also saves the entry worker's hop and its per-request log call into Node.
        unsafeDirectSockets: [{ host: ip, port }],
      },
      ...(assetsBinding
        ? [
            {
              name: "atropos-edge-assets",
              compatibilityDate: workerOptions.compatibilityDate,
              modules: true,
              // Only reached for paths with no asset (the assets router answers everything else).
              script:
                "export default { fetch() { return new Response('not found', { status: 404 }); } }",
              assets: { ...assets, routerConfig: { has_user_worker: false } },
            },
          ]
        : []),
    ],
    // The entry worker's own socket, unused: a spare loopback port.
    host: "127.0.0.1",
    port: 0,
    logRequests: false,
    ...(inspectorPort ? { inspectorPort: Number(inspectorPort) } : {}),
    log: new Log(LogLevel.INFO),
    cf: false, // offline: no Request.cf download
    d1Persist: state("d1"),
    r2Persist: state("r2"),
    durableObjectsPersist: state("do"),
    kvPersist: state("kv"),
    cachePersist: state("cache"),
    workflowsPersist: state("workflows"),
  });
  let url;
  try {
    await mf.ready;
    url = await mf.unsafeGetDirectURL(config.name);
  } catch (error) {
    process.stderr.write(`dev: could not start the Worker on ${ip}:${port}: ${error}\n`);
    process.exit(1);
  }
  process.stdout.write(`dev: ready on ${url.href.replace(/\/$/, "")} (state: ${persistTo})\n`);
  let stopping = false;
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, async () => {
      if (stopping) return;
      stopping = true;
      await mf.dispose().catch(() => {});
      process.exit(0);
    });
  }
}

/**
 * The state the Worker starts on: its pending D1 migrations applied, then the bundled tokenizer
 * families put into the local R2 bucket (tokenizers/<family>/) when missing or stale, where a
 * Worker reads them (docs/INFERENCE.md, "Tokenizers in Workers"). One short-lived Miniflare on
 * the same state folders, done before the server starts on them. A failed migration stops the
 * start; a failed upload is reported, not fatal: only a Worker that needs a missing family fails,
 * saying how to upload it.
 */
async function prepareLocalState(Miniflare, config, workerOptions) {
  const { unstable_splitSqlQuery } = await import("wrangler");
  const migrations = migrationSettings(config);
  const database = migrations && workerOptions.d1Databases?.[migrations.binding];
  const bucket = config.r2_buckets?.find((b) => b.binding === "PAYLOADS");
  const setup = new Miniflare({
    modules: true,
    script: "export default {}",
    d1Databases: database ? { [migrations.binding]: database } : {},
    d1Persist: join(persistTo, "v3", "d1"),
    r2Buckets: bucket ? { PAYLOADS: bucket.bucket_name } : {},
    r2Persist: join(persistTo, "v3", "r2"),
    cf: false,
  });
  let failure = null;
  try {
    if (database) failure = await migrateLocal(setup, migrations, unstable_splitSqlQuery);
    if (!failure) await seedTokenizers(setup, bucket);
  } finally {
    await setup.dispose();
  }
  if (failure) fail(`${failure}\n(the local state is ${persistTo})`);
}

/** Applies the pending D1 migrations; the failure's message, or null when all applied. */
async function migrateLocal(setup, migrations, splitSqlQuery) {
  const started = Date.now();
  let applied;
  try {
    applied = await applyLocalMigrations(
      await setup.getD1Database(migrations.binding),
      migrations,
      splitSqlQuery,
      (name, firstError) =>
        process.stdout.write(
          `dev: D1 migration ${name} failed once (${firstError}), applied on retry\n`,
        ),
    );
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  if (applied.length > 0) {
    const names = applied.length > 2 ? `${applied[0]} … ${applied.at(-1)}` : applied.join(", ");
    process.stdout.write(
      `dev: D1 migrations applied: ${names} (${applied.length}) in ${Date.now() - started} ms\n`,
    );
  }
  return null;
}

/** Puts the bundled tokenizers into the PAYLOADS bucket when missing or stale (never fatal). */
async function seedTokenizers(setup, bucket) {
  if (!bucket) {
    process.stdout.write("dev: no PAYLOADS R2 binding: bundled tokenizers not uploaded\n");
    return;
  }
  const started = Date.now();
  try {
    const uploaded = await seedBucket(await setup.getR2Bucket("PAYLOADS"));
    if (uploaded.length > 0) {
      process.stdout.write(
        `dev: bundled tokenizers put into local R2 (${uploaded.join(", ")}) in ${Date.now() - started} ms\n`,
      );
    }
  } catch (error) {
    process.stderr.write(`dev: could not put the bundled tokenizers into local R2: ${error}\n`);
  }
}

async function serveWithWranglerDev() {
  const [{ Miniflare }, { unstable_getMiniflareWorkerOptions, unstable_readConfig }] =
    await Promise.all([import("miniflare"), import("wrangler")]);
  const config = unstable_readConfig({ config: configPath });
  await prepareLocalState(
    Miniflare,
    config,
    unstable_getMiniflareWorkerOptions(config).workerOptions,
  );
  // A free port unless given: several dev servers (tests, `npm start`) must not fight over 9229.
  const inspector = inspectorPort ?? String(await freePort("127.0.0.1", [port]));
  const child = spawn(
    process.execPath,
    [
      wrangler,
      "dev",
      ...(entry ? [resolve(entry)] : []),
      "--ip",
      ip,
      "--port",
      String(port),
      "--persist-to",
      persistTo,
      "--inspector-port",
      inspector,
      ...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
      "--show-interactive-dev-session=false",
      ...args.filter((a) => a !== "--"),
    ],
    { cwd: root, env: childEnv, stdio: "inherit" },
  );
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => child.kill(signal));
  }
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
