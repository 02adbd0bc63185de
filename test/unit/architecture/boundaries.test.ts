/**
 * The folder boundaries of docs/ARCHITECTURE.md, checked on every import in src/: which part may
 * import which (at run time; `import type` may also name the platform layer's shapes), no import
 * cycles between modules (type-only imports included), D1 SQL only in the storage room, and
 * example envs that use nothing but the public API.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..", "..");
const SRC = join(ROOT, "src");

/** Run-time imports each part may make (besides its own folder and npm packages). */
const ALLOWED: Record<string, string[]> = {
  core: [],
  inference: ["core"],
  sandbox: ["core"],
  "env-sdk": ["core", "inference", "sandbox"],
  api: ["core"],
  client: ["core"],
  envs: ["core", "env-sdk", "sdk"],
  sim: ["core", "env-sdk", "inference", "envs"],
  engine: ["core", "inference", "sim"],
  worker: ["core", "api", "env-sdk", "inference", "sandbox", "envs"],
  sdk: ["core", "api", "env-sdk", "inference", "sandbox", "worker", "client", "sim"],
  cli: [
    "core",
    "api",
    "env-sdk",
    "inference",
    "sandbox",
    "worker",
    "envs",
    "client",
    "sim",
    "sdk",
    "engine",
  ],
};
/**
 * `import type` may also name these: none today. The API reaches the platform's EnvFeeder through
 * its own port (src/api/env-feeder-port.ts), never by import.
 */
const TYPE_ONLY_ALLOWED: Record<string, string[]> = {};

interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") && !path.endsWith(".d.ts") ? [path] : [];
  });
}

function resolveImport(from: string, spec: string): string | null {
  const base = normalize(join(dirname(from), spec));
  for (const candidate of [base, `${base}.ts`, join(base, "index.ts")]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // try the next form
    }
  }
  return null;
}

const IMPORT = /^\s*(import|export)\s+(type\s+)?(?:[^"';]*?\s+from\s+)?["'](\.{1,2}\/[^"']+)["']/gm;

function edgesOf(file: string): Edge[] {
  const text = readFileSync(file, "utf8");
  const edges: Edge[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const target = resolveImport(file, match[3]!);
    if (target) edges.push({ from: file, to: target, typeOnly: Boolean(match[2]) });
  }
  for (const match of text.matchAll(/import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g)) {
    const target = resolveImport(file, match[1]!);
    if (target) edges.push({ from: file, to: target, typeOnly: false });
  }
  return edges;
}

const partOf = (file: string) => relative(SRC, file).split("/")[0]!;
const files = sourceFiles(SRC);
const edges = files.flatMap(edgesOf);

describe("architecture boundaries", () => {
  it("every part imports only the parts below it", () => {
    const violations = edges
      .filter((e) => partOf(e.from) !== partOf(e.to))
      .filter((e) => {
        const from = partOf(e.from);
        const allowed = [
          ...(ALLOWED[from] ?? []),
          ...(e.typeOnly ? (TYPE_ONLY_ALLOWED[from] ?? []) : []),
        ];
        return !allowed.includes(partOf(e.to));
      })
      .map((e) => `${relative(ROOT, e.from)} → ${relative(ROOT, e.to)}`);
    expect(violations).toEqual([]);
  });

  it("has no import cycles between modules, type-only imports included", () => {
    const graph = new Map<string, string[]>();
    for (const e of edges) {
      graph.set(e.from, [...(graph.get(e.from) ?? []), e.to]);
    }
    const state = new Map<string, "open" | "done">();
    const cycles: string[] = [];
    const visit = (node: string, path: string[]) => {
      if (state.get(node) === "done") return;
      if (state.get(node) === "open") {
        cycles.push(
          [...path.slice(path.indexOf(node)), node].map((f) => relative(SRC, f)).join(" → "),
        );
        return;
      }
      state.set(node, "open");
      for (const next of graph.get(node) ?? []) visit(next, [...path, node]);
      state.set(node, "done");
    };
    for (const file of files) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it("speaks D1 SQL only in the storage room (src/api/storage/)", () => {
    const storage = join(SRC, "api", "storage");
    // A Durable Object's own SQLite (`ctx.storage.sql.exec`) is not D1 and stays in its object.
    const outside = files
      .filter((file) => !file.startsWith(storage))
      .filter((file) =>
        /\.prepare\(|\bdrizzle\(|from "drizzle-orm/.test(readFileSync(file, "utf8")),
      )
      .map((file) => relative(ROOT, file));
    expect(outside).toEqual([]);
  });

  it("example envs use only the public API (atropos-edge's src/sdk/env.ts) and their own files", () => {
    const envs = join(SRC, "envs");
    const publicApi = join(SRC, "sdk", "env.ts");
    const outside = edges
      .filter((e) => e.from.startsWith(envs) && e.from !== join(envs, "index.ts"))
      .filter((e) => e.to !== publicApi && !e.to.startsWith(envs))
      .map((e) => `${relative(ROOT, e.from)} → ${relative(ROOT, e.to)}`);
    expect(outside).toEqual([]);
    // Every example env module (not its helpers) default-exports a definition.
    for (const file of readdirSync(envs).filter((f) => f.endsWith(".ts") && f !== "index.ts")) {
      const text = readFileSync(join(envs, file), "utf8");
      if (/extends BaseEnv</.test(text)) expect(text, file).toMatch(/export default defineEnv\(/);
    }
  });

  it("npm packages an example env imports are the package's own dependencies", () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    const envs = join(SRC, "envs");
    for (const file of sourceFiles(envs)) {
      const text = readFileSync(file, "utf8");
      for (const match of text.matchAll(/from\s+["']([^."'][^"']*)["']/g)) {
        if (match[1]!.startsWith("node:")) continue;
        const name = match[1]!.startsWith("@")
          ? match[1]!.split("/").slice(0, 2).join("/")
          : match[1]!.split("/")[0]!;
        expect(
          Object.keys(manifest.dependencies),
          `${relative(ROOT, file)} imports ${name}`,
        ).toContain(name);
      }
    }
  });
});
