#!/usr/bin/env node
/**
 * `npm run dev -- [--port 8787] [--persist-to .wrangler/state] [--ip 127.0.0.1] [--inspector-port N]`
 * Applies the D1 migrations to the local state, then serves the Worker (API, queues, DOs,
 * dashboard) with `wrangler dev`. Local state persists across restarts. Works offline.
 */
import { spawn, spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf(`--${name}`);
  if (i >= 0 && args[i + 1]) return args.splice(i, 2)[1];
  const eq = args.findIndex((a) => a.startsWith(`--${name}=`));
  if (eq >= 0) return args.splice(eq, 1)[0].split("=")[1];
  return fallback;
}
const port = option("port", process.env.PORT ?? "8787");
const persistTo = option("persist-to", join(root, ".wrangler", "state"));
const ip = option("ip", "127.0.0.1");

/** A free loopback port: several dev servers (tests, `npm start`) must not fight over 9229. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port: free } = server.address();
      server.close(() => resolve(free));
    });
  });
}
const inspectorPort = option("inspector-port", String(await freePort()));

const env = {
  ...process.env,
  // Offline-friendly: no Request.cf download, no telemetry, no error reports.
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_SEND_METRICS: "false",
  WRANGLER_SEND_ERROR_REPORTS: "false",
  CI: process.env.CI ?? "true",
};
const wrangler = join(root, "node_modules", ".bin", "wrangler");

const migrate = spawnSync(
  wrangler,
  ["d1", "migrations", "apply", "DB", "--local", "--persist-to", persistTo],
  { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" },
);
if (migrate.status !== 0) {
  process.stderr.write(migrate.stdout + migrate.stderr);
  process.stderr.write("\nFailed to apply D1 migrations to the local state (see above).\n");
  process.exit(migrate.status ?? 1);
}

const child = spawn(
  wrangler,
  [
    "dev",
    "--ip",
    ip,
    "--port",
    String(port),
    "--persist-to",
    persistTo,
    "--inspector-port",
    String(inspectorPort),
    "--var",
    "DEPLOYMENT:local",
    "--show-interactive-dev-session=false",
    ...args,
  ],
  { cwd: root, env, stdio: "inherit" },
);
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
