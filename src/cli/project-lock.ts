/**
 * A lockfile for a project made by `init`, cut out of atropos-edge's own lockfile: the same
 * versions this package is tested with, and an install that needs nothing beyond the npm cache
 * once atropos-edge's own `npm ci` has run (npm resolves a project without a lockfile from
 * registry metadata, which `npm ci` never caches).
 */

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  dev?: boolean;
  devOptional?: boolean;
  optional?: boolean;
  peer?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [field: string]: unknown;
}

export interface Lockfile {
  name?: string;
  version?: string;
  lockfileVersion: number;
  requires?: boolean;
  packages: Record<string, LockEntry>;
}

/** Node's lookup: `name` in `from`'s own node_modules, then in each ancestor's. */
function resolveIn(packages: Record<string, LockEntry>, from: string, name: string) {
  let base = from;
  for (;;) {
    const candidate = base ? `${base}/node_modules/${name}` : `node_modules/${name}`;
    if (packages[candidate]) return candidate;
    if (!base) return null;
    const cut = base.lastIndexOf("/node_modules/");
    base = cut >= 0 ? base.slice(0, cut) : "";
  }
}

function requiredNames(entry: LockEntry): string[] {
  const optionalPeers = entry.peerDependenciesMeta ?? {};
  return [
    ...Object.keys(entry.dependencies ?? {}),
    ...Object.keys(entry.optionalDependencies ?? {}),
    ...Object.keys(entry.peerDependencies ?? {}).filter((n) => !optionalPeers[n]?.optional),
  ];
}

/** Every lockfile path reachable from `roots` (names resolved from the lockfile's root). */
function closure(packages: Record<string, LockEntry>, roots: string[]): Set<string> {
  const seen = new Set<string>();
  const queue: [string, string][] = roots.map((name) => ["", name]);
  for (let next = queue.shift(); next; next = queue.shift()) {
    const path = resolveIn(packages, next[0], next[1]);
    if (!path || seen.has(path)) continue;
    seen.add(path);
    for (const dep of requiredNames(packages[path]!)) queue.push([path, dep]);
  }
  return seen;
}

export function projectLockfile(options: {
  source: Lockfile;
  project: { name: string; version: string };
  /** The atropos-edge entry as installed (version, resolved, integrity). */
  atroposEdge: LockEntry;
  atroposEdgeSpec: string;
  devDependencies: Record<string, string>;
}): Lockfile {
  const { source, atroposEdge } = options;
  const ownRoot = source.packages[""] ?? {};
  const runtimeNames = Object.keys(ownRoot.dependencies ?? {});
  const peerNames = Object.keys(ownRoot.peerDependencies ?? {});
  const runtime = closure(source.packages, runtimeNames);
  const all = closure(source.packages, [
    ...runtimeNames,
    ...peerNames,
    ...Object.keys(options.devDependencies),
  ]);
  const packages: Record<string, LockEntry> = {
    "": {
      name: options.project.name,
      version: options.project.version,
      dependencies: { "atropos-edge": options.atroposEdgeSpec },
      devDependencies: options.devDependencies,
    },
    "node_modules/atropos-edge": {
      ...atroposEdge,
      license: ownRoot.license,
      dependencies: ownRoot.dependencies,
      peerDependencies: ownRoot.peerDependencies,
      // npm links bins from the lockfile's entry, not from the installed package.json.
      bin: ownRoot.bin,
      engines: ownRoot.engines,
    },
  };
  for (const path of [...all].sort()) {
    const { dev, devOptional, peer, ...entry } = source.packages[path]!;
    // Flags are recomputed for this project: what atropos-edge needs at run time is not dev.
    packages[path] = runtime.has(path) ? entry : { ...entry, dev: true };
  }
  return {
    name: options.project.name,
    version: options.project.version,
    lockfileVersion: 3,
    requires: true,
    packages,
  };
}
