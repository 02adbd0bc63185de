/**
 * Atropos' configuration habits for serve / process / evaluate / start: `--env.<field> v` and
 * `--openai.<field> v` flags, and config files with top-level `env:` / `openai:` sections (plus
 * `slurm`, `testing`…). Fields are looked up in src/cli/atropos-fields.ts: some set a CLI option
 * (openai.base_url = --inference-url), the others go to the env's config or the server configs;
 * fields that mean nothing here are accepted with a warning; anything else is an error.
 */
import type { EnvDefinition } from "../env-sdk/define-env";
import {
  ATROPOS_FIELDS,
  type AtroposField,
  atroposField,
  EDGE_SERVER_FIELDS,
} from "./atropos-fields";

type Mapping = Record<string, unknown>;

/** One `env.*` / `openai.*` value and where it was written (for messages). */
interface Entry {
  value: unknown;
  origin: string;
}

/** What `--env.*` / `--openai.*` flags and a config file's Atropos sections contain. */
export interface AtroposInput {
  env: Map<string, Entry>;
  /** `openai:` as a list (one mapping = a list of one); entry 0 also takes `--openai.*`. */
  openai: Mapping[];
  openaiOrigin: string;
  warnings: string[];
}

export const emptyAtroposInput = (): AtroposInput => ({
  env: new Map(),
  openai: [],
  openaiOrigin: "",
  warnings: [],
});

/** Atropos' flag values: JSON when it parses (numbers, booleans, null, lists), "None" → null. */
export function parseFlagValue(raw: string): unknown {
  if (raw === "None") return null;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export interface DottedFlags {
  env: Mapping;
  openai: Mapping;
}

/**
 * Takes `--env.<field> v`, `--env.<field>=v` and `--openai.<field> v` out of argv (a bare
 * `--env.<field>` means true); commander then parses the rest. A plain `--env X` stays.
 */
export function extractDottedFlags(argv: string[]): { argv: string[]; dotted: DottedFlags } {
  const dotted: DottedFlags = { env: {}, openai: {} };
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const m = /^--(env|openai)\.([A-Za-z0-9_.-]+?)(?:=(.*))?$/s.exec(arg);
    if (!m) {
      rest.push(arg);
      continue;
    }
    const [, section, field, inline] = m as unknown as [string, "env" | "openai", string, string?];
    let raw = inline;
    if (raw === undefined) {
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith("--")) {
        raw = next;
        i++;
      }
    }
    dotted[section][field.replace(/-/g, "_")] = raw === undefined ? true : parseFlagValue(raw);
  }
  return { argv: rest, dotted };
}

const isMapping = (v: unknown): v is Mapping =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/** Whether a parsed config file uses Atropos' layout (judged by its top-level keys). */
export function isAtroposLayout(file: Mapping): boolean {
  return (
    isMapping(file.env) ||
    "openai" in file ||
    ATROPOS_FIELDS.some((f) => f.section === "top" && f.name in file)
  );
}

function warnIgnored(field: AtroposField, origin: string): string {
  const where = field.section === "top" ? field.name : `${field.section}.${field.name}`;
  return `${origin}: ${where} is accepted and ignored (${field.note})`;
}

function checkServerFields(server: Mapping, origin: string, warnings: string[]): void {
  for (const key of Object.keys(server)) {
    const field = atroposField("openai", key);
    if (field?.status === "ignored") warnings.push(warnIgnored(field, origin));
    else if (!field && !(EDGE_SERVER_FIELDS as readonly string[]).includes(key)) {
      throw new Error(
        `${origin}: unknown field openai.${key} (neither an Atropos APIServerConfig field nor an atropos-edge one; see docs/CONFIG.md)`,
      );
    }
  }
}

/**
 * Splits a parsed config file into its Atropos sections and the rest (the flat / per-command
 * layout, read by resolveOptions as before).
 */
export function splitAtroposFile(
  file: Mapping,
  path: string,
): { rest: Mapping; atropos: AtroposInput } {
  const atropos = emptyAtroposInput();
  if (!isAtroposLayout(file)) return { rest: file, atropos };
  const rest: Mapping = {};
  for (const [key, value] of Object.entries(file)) {
    if (key === "env") {
      if (!isMapping(value)) throw new Error(`${path}: env: must be a mapping of env fields`);
      for (const [k, v] of Object.entries(value)) atropos.env.set(k, { value: v, origin: path });
    } else if (key === "openai") {
      const list = Array.isArray(value) ? value : value === null ? [] : [value];
      if (!list.every(isMapping)) {
        throw new Error(`${path}: openai: must be a server config mapping or a list of them`);
      }
      for (const server of list) checkServerFields(server, path, atropos.warnings);
      atropos.openai = list.map((s) => ({ ...s }));
      atropos.openaiOrigin = path;
    } else {
      const top = atroposField("top", key);
      if (top) atropos.warnings.push(warnIgnored(top, path));
      else rest[key] = value;
    }
  }
  return { rest, atropos };
}

/** Layers `--env.*` / `--openai.*` flags over the file's sections (flags win). */
export function withDottedFlags(input: AtroposInput, dotted: DottedFlags): AtroposInput {
  const out: AtroposInput = {
    env: new Map(input.env),
    openai: input.openai.map((s) => ({ ...s })),
    openaiOrigin: input.openaiOrigin,
    warnings: [...input.warnings],
  };
  for (const [k, v] of Object.entries(dotted.env))
    out.env.set(k, { value: v, origin: `--env.${k}` });
  const openaiKeys = Object.keys(dotted.openai);
  if (openaiKeys.length > 0) {
    if (out.openai.length > 1) {
      throw new Error(
        `--openai.${openaiKeys[0]}: ${input.openaiOrigin} lists ${out.openai.length} servers; edit them there (--openai.* sets a single server)`,
      );
    }
    checkServerFields(dotted.openai, "command line", out.warnings);
    out.openai = [{ ...(out.openai[0] ?? {}), ...dotted.openai }];
  }
  return out;
}

/** Which commands and options a field's CLI option applies to. */
export interface OptionScope {
  command: string;
  /** camelCase keys of the command's options. */
  optionKeys: string[];
}

/** The CLI option `field` sets in this command, if it sets one here. */
function optionOf(field: AtroposField | undefined, scope: OptionScope): string | undefined {
  const option = field?.option;
  if (!option || !scope.optionKeys.includes(option.key)) return undefined;
  if (option.commands && !(option.commands as string[]).includes(scope.command)) return undefined;
  return option.key;
}

/**
 * The CLI options the Atropos fields set in this command, split by layer: `flags` from
 * `--env.*` / `--openai.*`, `file` from the config file.
 */
export function atroposOptions(
  input: AtroposInput,
  scope: OptionScope,
  dotted: DottedFlags,
): { flags: Mapping; file: Mapping } {
  const flags: Mapping = {};
  const file: Mapping = {};
  for (const [k, v] of Object.entries(input.openai[0] ?? {})) {
    const key = optionOf(atroposField("openai", k), scope);
    if (!key || v === undefined || v === null || v === "") continue;
    if (k === "tokenizer_name" && v === "none") continue;
    (k in dotted.openai ? flags : file)[key] = v;
  }
  // After the server's: the env's own tokenizer_name wins, as the env is what tokenizes.
  for (const [k, { value, origin }] of input.env) {
    const key = optionOf(atroposField("env", k), scope);
    if (!key || value === undefined || value === null) continue;
    (origin.startsWith("--") ? flags : file)[key] = value;
  }
  return { flags, file };
}

const shapeKeys = (def: EnvDefinition): string[] => {
  const shape = (def.configSchema as unknown as { shape?: Mapping }).shape;
  return shape ? Object.keys(shape) : Object.keys(def.defaultConfig);
};

/**
 * The `env.*` fields each env receives: fields of its config schema pass; Atropos fields that
 * set a CLI option or mean nothing here are dropped (the latter with a warning); anything else
 * is an error naming the field and where it was written.
 */
export function envConfigsFor(
  defs: EnvDefinition[],
  input: AtroposInput,
  scope: OptionScope,
  warnings: string[],
): Mapping[] {
  const keys = defs.map(shapeKeys);
  const configs: Mapping[] = defs.map(() => ({}));
  for (const [k, { value, origin }] of input.env) {
    // Set through its CLI option (atroposOptions), which the command passes on itself.
    if (optionOf(atroposField("env", k), scope)) continue;
    let known = false;
    defs.forEach((_, i) => {
      if (keys[i]!.includes(k)) {
        configs[i]![k] = value;
        known = true;
      }
    });
    if (known) continue;
    const field = atroposField("env", k);
    if (field?.status === "ignored") warnings.push(warnIgnored(field, origin));
    else if (!field?.option) {
      throw new Error(
        `${origin}: unknown field env.${k} (neither an Atropos BaseEnvConfig field nor a field of ${defs.map((d) => d.name).join(", ")}; see docs/CONFIG.md)`,
      );
    }
  }
  return configs;
}
