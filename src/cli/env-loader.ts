/**
 * `--env` for every command: a built-in env name (see `atropos-edge envs`) or a path to a module
 * whose default export is an env made with `defineEnv(...)`.
 */
import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { errorMessage } from "../core/errors";
import type { EnvDefinition } from "../env-sdk/define-env";
import { getEnvDefinition } from "../envs/index";

/** A path (has a separator or a module extension) rather than a registry name. */
export function isEnvPath(nameOrPath: string): boolean {
  return /[\\/]/.test(nameOrPath) || /\.[cm]?[jt]sx?$/.test(nameOrPath);
}

function isEnvDefinition(value: unknown): value is EnvDefinition {
  if (!value || typeof value !== "object") return false;
  const v = value as Partial<EnvDefinition>;
  return (
    typeof v.name === "string" &&
    typeof v.create === "function" &&
    typeof v.configSchema === "object" &&
    typeof v.defaultConfig === "object"
  );
}

function describe(value: unknown): string {
  if (value === undefined || value === null) return String(value);
  if (typeof value === "function") return `function ${value.name || "(anonymous)"}`;
  if (typeof value === "object") {
    const keys = Object.keys(value);
    return `an object with keys ${keys.length ? keys.slice(0, 5).join(", ") : "(none)"}`;
  }
  return typeof value;
}

function firstLine(error: unknown): string {
  const text = errorMessage(error);
  return text.split("\n").find((l) => l.trim()) ?? text;
}

/** Codes of a plain import() that tsx's own import can still load. */
const RETRY_WITH_TSX = ["ERR_UNKNOWN_FILE_EXTENSION", "ERR_REQUIRE_CYCLE_MODULE"];

/** The module's default export. */
async function importDefault(file: string): Promise<unknown> {
  const url = pathToFileURL(file).href;
  try {
    // The CLI runs under tsx's loader (bin/atropos-edge.mjs, npm scripts): a plain import shares
    // the repo's module instances with the env (its DropGroupError is the runtime's).
    return ((await import(url)) as { default?: unknown }).default;
  } catch (error) {
    // A .ts file outside a "type": "module" package is CommonJS to Node, and a CommonJS module
    // importing the repo's ESM sources fails in a plain import; tsx's own import loads it.
    if (!RETRY_WITH_TSX.includes(String((error as { code?: string }).code))) throw error;
    const { tsImport } = await import("tsx/esm/api");
    const mod = (await tsImport(url, import.meta.url)) as { default?: unknown };
    // CommonJS interop: the namespace's default is module.exports, whose default is the export.
    const exports = mod.default as { default?: unknown } | undefined;
    return exports && typeof exports === "object" && "default" in exports
      ? exports.default
      : exports;
  }
}

/** Resolves `--env`; errors are one line naming the file and what was expected. */
export async function loadEnvDefinition(nameOrPath: string, cwd: string): Promise<EnvDefinition> {
  if (!isEnvPath(nameOrPath)) {
    try {
      return getEnvDefinition(nameOrPath);
    } catch (error) {
      // The catalog lists the built-ins; a user's own env is reached by its file.
      throw new Error(
        `${firstLine(error)}; for your own env pass its file, e.g. --env ./src/envs/${nameOrPath}.ts`,
      );
    }
  }
  const file = isAbsolute(nameOrPath) ? nameOrPath : resolve(cwd, nameOrPath);
  if (!existsSync(file)) throw new Error(`${nameOrPath}: no such file (looked at ${file})`);
  let exported: unknown;
  try {
    exported = await importDefault(file);
  } catch (error) {
    // A Worker entry (or anything importing cloudflare:*) cannot run in Node: point at the env.
    const hint = /cloudflare:/.test(firstLine(error))
      ? " (it imports Worker-only modules: pass the env's own file, the one whose default export is defineEnv(...), not the Worker entry)"
      : "";
    throw new Error(`${nameOrPath}: cannot load the module: ${firstLine(error)}${hint}`);
  }
  if (!isEnvDefinition(exported)) {
    throw new Error(
      `${nameOrPath}: default export must be an env made with defineEnv(...) (got ${describe(exported)})`,
    );
  }
  return exported;
}

/** What the commands take as `env`: a loaded definition, or a name/path resolved from cwd. */
export type EnvRef = string | EnvDefinition;

export async function envDefinitionOf(ref: EnvRef): Promise<EnvDefinition> {
  return typeof ref === "string" ? loadEnvDefinition(ref, process.cwd()) : ref;
}
