/**
 * Option resolution for every CLI command. Precedence, highest first:
 *   command-line flag > ATROPOS_EDGE_<NAME> env var > --config file (command section, then top
 *   level) > built-in default.
 * Commander reads the flags and env vars (commands/options.ts declares `Option.env` per option and
 * parses values with `parseValue`); the config file layer is ours. Keys may be written camelCase,
 * kebab-case or snake_case in files; values are coerced to the type of the default.
 */
import { readFileSync } from "node:fs";
import { extname } from "node:path";
import { parse as parseYaml } from "yaml";

export type ConfigValue = string | number | boolean;

/** Default value per option; `undefined` = optional string with no default. */
export type OptionDefaults = Record<string, ConfigValue | undefined>;

export type Resolved<D extends OptionDefaults> = {
  [K in keyof D]: D[K] extends number ? number : D[K] extends boolean ? boolean : D[K];
};

export function camelCase(key: string): string {
  return key.replace(/[-_]+([a-z0-9])/gi, (_, c: string) => c.toUpperCase());
}

/** `batchSize` → `ATROPOS_EDGE_BATCH_SIZE`. */
export function envVarName(key: string): string {
  return `ATROPOS_EDGE_${key.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase()}`;
}

/** `value` as the type of `fallback` (number, boolean, string), or what it should have been. */
export function parseValue(
  value: unknown,
  fallback: ConfigValue | undefined,
): { ok: true; value: ConfigValue } | { ok: false; expected: string } {
  if (typeof fallback === "number") {
    const n = typeof value === "number" ? value : Number(String(value).trim());
    const blank = typeof value !== "number" && String(value).trim() === "";
    return Number.isFinite(n) && !blank
      ? { ok: true, value: n }
      : { ok: false, expected: "a number" };
  }
  if (typeof fallback === "boolean") {
    if (typeof value === "boolean") return { ok: true, value };
    const s = String(value).trim().toLowerCase();
    if (["1", "true", "yes", "on"].includes(s)) return { ok: true, value: true };
    if (["0", "false", "no", "off", ""].includes(s)) return { ok: true, value: false };
    return { ok: false, expected: "true or false (1/0, yes/no, on/off)" };
  }
  if (typeof value === "object" && value !== null) return { ok: false, expected: "a single value" };
  return { ok: true, value: String(value) };
}

/** `value` as the type of `fallback`; `origin` names where it came from in the error. */
export function coerce(
  key: string,
  value: unknown,
  fallback: ConfigValue | undefined,
  origin: string,
): ConfigValue | undefined {
  if (value === undefined || value === null) return undefined;
  const parsed = parseValue(value, fallback);
  if (!parsed.ok) {
    throw new Error(
      `${origin}: option '${key}' must be ${parsed.expected}, got ${JSON.stringify(value)}`,
    );
  }
  return parsed.value;
}

/** Reads a YAML or JSON config file into a flat camelCase record (plus nested command sections). */
export function loadConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new Error(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = extname(path).toLowerCase() === ".json" ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new Error(`config file ${path} is not valid YAML/JSON: ${(err as Error).message}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new Error(`config file ${path} must contain a mapping of option names to values`);
  }
  return parsed as Record<string, unknown>;
}

function normalizeKeys(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [camelCase(k), v]));
}

export function resolveOptions<D extends OptionDefaults>(
  defaults: D,
  sources: {
    /** Only flags the user actually typed (commander: value source "cli"). */
    flags: Record<string, unknown>;
    /** By option key: what commander read from ATROPOS_EDGE_<NAME> (value source "env"). */
    env?: Record<string, unknown>;
    file?: Record<string, unknown>;
    /** Command name: a `{command: {...}}` section of the file overrides its top level. */
    command?: string;
  },
): Resolved<D> {
  const file = normalizeKeys(sources.file ?? {});
  const section = sources.command ? file[camelCase(sources.command)] : undefined;
  const fileSection =
    section && typeof section === "object" && !Array.isArray(section)
      ? normalizeKeys(section as Record<string, unknown>)
      : {};
  const env = sources.env ?? {};
  const out: Record<string, ConfigValue | undefined> = {};
  for (const [key, fallback] of Object.entries(defaults)) {
    const candidates: [unknown, string][] = [
      [sources.flags[key], "command line"],
      [env[key], `env var ${envVarName(key)}`],
      [fileSection[key], "config file"],
      [file[key], "config file"],
    ];
    const hit = candidates.find(([v]) => v !== undefined);
    out[key] = hit ? coerce(key, hit[0], fallback, hit[1]) : fallback;
  }
  // why: the mapped type is exactly what the loop built, key for key.
  return out as Resolved<D>;
}
