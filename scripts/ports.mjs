/**
 * Loopback ports for servers started later by another process (dev servers, engines, stand-ins).
 *
 * A port picked by binding port 0 lies in the kernel's ephemeral range, and the kernel hands that
 * range out again to any bind(0) and to the source port of every outgoing connection. A dev server
 * binds its port seconds after the pick (bundle, migrations, seeding), so in a busy test run
 * something else can take it first. Ports below that range are never handed out by the kernel;
 * a per-process walk through them keeps one process's picks apart.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

const LINUX_RANGE = "/proc/sys/net/ipv4/ip_local_port_range";
const POOL_SIZE = 10_000;

/** The kernel's ephemeral range ([32768, 60999] on Linux by default; IANA's on other systems). */
export function ephemeralRange() {
  try {
    const [low, high] = readFileSync(LINUX_RANGE, "utf8").trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low <= high) return [low, high];
  } catch {
    // Not Linux: fall through to the IANA range macOS and Windows use (FreeBSD's starts lower,
    // at 10000, so there the pool below lies inside its range: a collision stays possible).
  }
  return [49152, 65535];
}

/** The ports picked from: below the ephemeral range when there is room there, else above it. */
export function pickPool() {
  const [low, high] = ephemeralRange();
  if (low - 1024 >= POOL_SIZE) return [low - POOL_SIZE, low - 1];
  if (65535 - high >= POOL_SIZE) return [high + 1, high + POOL_SIZE];
  return [1024, 65535];
}

let cursor = -1;

/** Whether a server can listen on `port` at `host` right now. */
export function portIsFree(port, host = "127.0.0.1") {
  return new Promise((resolveFree) => {
    const server = createServer();
    server.once("error", () => resolveFree(false));
    server.listen(port, host, () => server.close(() => resolveFree(true)));
  });
}

/**
 * A port that is free at `host` now and that the kernel will not hand to anyone else meanwhile,
 * none of `exclude` (ports already promised to a server that has not bound them yet).
 */
export async function freePort(host = "127.0.0.1", exclude = []) {
  const [first, last] = pickPool();
  const size = last - first + 1;
  // Each process starts at its own place, so parallel test workers rarely probe the same ports.
  if (cursor < 0) cursor = (process.pid * 7919) % size;
  for (let tried = 0; tried < 1000; tried++) {
    const candidate = first + cursor;
    cursor = (cursor + 1) % size;
    if (!exclude.includes(candidate) && (await portIsFree(candidate, host))) return candidate;
  }
  throw new Error(`no free port at ${host} among 1000 tried in ${first}-${last}`);
}
