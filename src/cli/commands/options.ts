/**
 * What every command module shares: option specs (flag, key, help, default), `withOptions` (adds
 * them and --config to a command, each with its ATROPOS_EDGE_<NAME> env var for commander to read,
 * and resolves flags > env vars > config file > defaults, with the Atropos `--env.*` /
 * `--openai.*` layer for the env commands), and the helpers the actions use. Each command
 * registers itself from its own module (commands/*.ts).
 */
import { spawn } from "node:child_process";
import { type Command, InvalidArgumentError, Option } from "commander";
import { SERVER_TYPES } from "../../core/wire/server-config";
import type { EnvDefinition } from "../../env-sdk/define-env";
import {
  type AtroposInput,
  atroposOptions,
  type DottedFlags,
  emptyAtroposInput,
  envConfigsFor,
  type OptionScope,
  splitAtroposFile,
  withDottedFlags,
} from "../atropos-config";
import {
  envVarName,
  loadConfigFile,
  type OptionDefaults,
  parseValue,
  type Resolved,
  resolveOptions,
} from "../config";
import { withInitConfig, withInitServers } from "../config-init";
import { loadEnvDefinition } from "../env-loader";
import { chooseTokenizer } from "../tokenizer-choice";
import { isTrainLayout, TRAIN_LAYOUT_KEYS } from "../train-config";

export type { OptionDefaults, Resolved };

export interface OptionSpec {
  flags: string;
  key: string;
  description: string;
  default: string | number | boolean | undefined;
}

export const opt = (
  flags: string,
  key: string,
  description: string,
  fallback: string | number | boolean | undefined,
): OptionSpec => ({ flags, key, description, default: fallback });

export const ENV_HELP =
  "built-in env name (see `atropos-edge envs`) or path to a module whose default export is defineEnv(...)";

export const INFERENCE: OptionSpec[] = [
  opt(
    "--inference-url <url>",
    "inferenceUrl",
    "inference server base URL (…/v1); default: start the in-process simulator",
    undefined,
  ),
  opt(
    "--server-type <type>",
    "serverType",
    `which server --inference-url is (the simulator speaks all of them): ${SERVER_TYPES.join(" | ")}; see docs/INFERENCE.md`,
    "vllm",
  ),
  opt("--model <name>", "model", "model name sent to the inference server", "sim-policy"),
  opt("--api-key <key>", "apiKey", "inference server API key", undefined),
  opt(
    "--tokenizer <name>",
    "tokenizer",
    "bundled tokenizer or model name (atropos-edge tokenizers), a directory, a URL or an HF id (default: --model's family; qwen3 for the simulator)",
    undefined,
  ),
  opt(
    "--force-tokenizer",
    "forceTokenizer",
    "use --tokenizer even when --model is known to use another family",
    false,
  ),
  opt(
    "--engine <file.gguf>",
    "engine",
    "run this GGUF model on the llama.cpp engine in-process instead of the simulator (docs/INFERENCE.md)",
    undefined,
  ),
  opt("--sim-latency-ms <ms>", "simLatencyMs", "simulator latency per request", 0),
  opt("--sim-seed <n>", "simSeed", "simulator seed (outputs are deterministic per seed)", 0),
];

function defaultsOf(specs: OptionSpec[]): OptionDefaults {
  return Object.fromEntries(specs.map((s) => [s.key, s.default]));
}

/** Commands that run an env: they take `--env.*` / `--openai.*` and Atropos config sections. */
const ENV_COMMANDS = ["serve", "process", "evaluate", "start"];

/** The env-side configuration of one command invocation. */
export interface EnvContext {
  /** The --config file as the loader read it (train parses its own layout from it). */
  configFile: { path: string; contents: Record<string, unknown> } | null;
  atropos: AtroposInput;
  /** Whether the user set this option (flag, env var or config file), by option key. */
  userSet(optionKey: string): boolean;
  /** Loads `--env` values (names or paths) with the `env.*` config each one gets. */
  loadEnvs(namesOrPaths: string[]): Promise<LoadedEnv[]>;
  loadEnv(nameOrPath: string): Promise<LoadedEnv>;
}

export interface LoadedEnv {
  def: EnvDefinition;
  config: Record<string, unknown>;
}

const warned = new Set<string>();
function warn(message: string): void {
  if (warned.has(message)) return;
  warned.add(message);
  console.error(`warning: ${message}`);
}

/**
 * Adds the option of `spec` to `cmd`. Commander reads its flag and its ATROPOS_EDGE_<NAME> env var
 * (help shows both), parses numbers and booleans, and says which one set it (getOptionValueSource).
 */
function addSpec(cmd: Command, spec: OptionSpec): Option {
  const envVar = envVarName(spec.key);
  const option = new Option(spec.flags, spec.description).env(envVar);
  // The default is ours to apply (the config file sits between it and the env var); commander's
  // only shows it in help (its value source "default" counts as unset).
  if (spec.default !== undefined && spec.default !== false) {
    option.default(spec.default, String(spec.default));
  }
  const fallback = spec.default;
  if (typeof fallback === "number") {
    option.argParser((value) => {
      const parsed = parseValue(value, fallback);
      // Commander prefixes where the value came from: the flag, or the env var.
      if (!parsed.ok) throw new InvalidArgumentError(`'${spec.key}' must be ${parsed.expected}.`);
      return parsed.value;
    });
  }
  cmd.addOption(option);
  if (option.isBoolean()) {
    // why: commander sets a boolean flag from its env var by the var's presence alone, so
    // ATROPOS_EDGE_X=false would read as true. This handler runs after commander's (only when no
    // flag was given) and sets the value the env var spells.
    cmd.on(`optionEnv:${option.name()}`, () => {
      const raw = process.env[envVar];
      const parsed = parseValue(raw, false);
      if (!parsed.ok) {
        cmd.error(
          `error: option '${option.flags}' value '${raw}' from env '${envVar}' is invalid. '${spec.key}' must be ${parsed.expected}.`,
          { code: "commander.invalidArgument" },
        );
      }
      cmd.setOptionValueWithSource(option.attributeName(), parsed.value, "env");
    });
  }
  return option;
}

/** What commander took from `source` ("cli" or "env"), by option key. */
function valuesFrom(
  command: Command,
  added: [OptionSpec, Option][],
  source: "cli" | "env",
): Record<string, unknown> {
  return Object.fromEntries(
    added
      .filter(([, o]) => command.getOptionValueSource(o.attributeName()) === source)
      .map(([s, o]) => [s.key, command.getOptionValue(o.attributeName())]),
  );
}

/** Adds `specs` + --config to `cmd`; the action gets fully resolved options. */
export function withOptions<S extends OptionSpec[]>(
  cmd: Command,
  specs: S,
  action: (options: Resolved<OptionDefaults>, args: string[], env: EnvContext) => Promise<number>,
  dotted: DottedFlags = { env: {}, openai: {} },
): Command {
  const added = specs.map((s): [OptionSpec, Option] => [s, addSpec(cmd, s)]);
  cmd.addOption(
    new Option("--config <file>", "YAML or JSON file with options").env("ATROPOS_EDGE_CONFIG"),
  );
  if (ENV_COMMANDS.includes(cmd.name())) {
    cmd.addHelpText(
      "after",
      "\nAtropos-style settings: --env.<field> VALUE (env config), --openai.<field> VALUE (inference\nserver), and --config files with env:/openai: sections; see docs/CONFIG.md.",
    );
  }
  cmd.action(async (...received: unknown[]) => {
    const command = received[received.length - 1] as Command;
    const args = received.slice(0, -2).map(String);
    const configPath = command.getOptionValue("config") as string | undefined;
    const name = command.name();
    const runsEnv = ENV_COMMANDS.includes(name);
    const hasDotted = Object.keys(dotted.env).length + Object.keys(dotted.openai).length > 0;
    if (hasDotted && !runsEnv) {
      throw new Error(
        `--env.* / --openai.* flags apply to ${ENV_COMMANDS.join(", ")}, not ${name}`,
      );
    }
    const loaded = configPath ? loadConfigFile(configPath) : {};
    const trainLayout = isTrainLayout(loaded);
    if (trainLayout !== (name === "train") && configPath) {
      throw new Error(
        trainLayout
          ? `${configPath} is a train config (${TRAIN_LAYOUT_KEYS.join(", ")}): run \`atropos-edge train --config ${configPath}\``
          : `${configPath} has none of ${TRAIN_LAYOUT_KEYS.join(", ")}: train takes a config in that layout (docs/JUDGES.md)`,
      );
    }
    const file =
      configPath && !trainLayout
        ? splitAtroposFile(loaded, configPath)
        : { rest: {}, atropos: emptyAtroposInput() };
    const atropos = runsEnv ? withDottedFlags(file.atropos, dotted) : emptyAtroposInput();
    const scope: OptionScope = { command: name, optionKeys: specs.map((s) => s.key) };
    const mapped = atroposOptions(atropos, scope, dotted);
    const sources = {
      flags: { ...mapped.flags, ...valuesFrom(command, added, "cli") },
      env: valuesFrom(command, added, "env"),
      file: { ...file.rest, ...mapped.file },
      command: name,
    };
    const resolved = resolveOptions(defaultsOf(specs), sources);
    for (const w of atropos.warnings) warn(w);
    const loadEnvs = async (namesOrPaths: string[]): Promise<LoadedEnv[]> => {
      const defs: EnvDefinition[] = [];
      for (const n of namesOrPaths) defs.push(await loadEnvDefinition(n, process.cwd()));
      const warnings: string[] = [];
      const configs = envConfigsFor(defs, atropos, scope, warnings);
      for (const w of warnings) warn(w);
      return defs.map((def, i) => ({ def, config: withInitConfig(def, configs[i] ?? {}) }));
    };
    const envContext: EnvContext = {
      userSet: (key) => resolveOptions({ [key]: undefined }, sources)[key] !== undefined,
      configFile: configPath ? { path: configPath, contents: loaded } : null,
      atropos,
      loadEnvs,
      loadEnv: async (nameOrPath) => {
        const [loaded] = await loadEnvs([nameOrPath]);
        if (!loaded) throw new Error(`cannot load env ${nameOrPath}`);
        return loaded;
      },
    };
    process.exitCode = await action(resolved, args, envContext);
  });
  return cmd;
}

export const str = (v: unknown): string | undefined =>
  v === undefined || v === "" ? undefined : String(v);

/** The inference options, under which the env's config_init servers fill what the user left unset. */
export function inferenceFlags(o: Resolved<OptionDefaults>, env: EnvContext, def?: EnvDefinition) {
  const flags = {
    servers: env.atropos.openai,
    inferenceUrl: str(o.inferenceUrl),
    engine: str(o.engine),
    serverType: String(o.serverType),
    model: String(o.model),
    apiKey: str(o.apiKey),
    tokenizer: chooseTokenizer({
      model: String(o.model),
      tokenizer: str(o.tokenizer),
      force: Boolean(o.forceTokenizer),
    }),
    simLatencyMs: Number(o.simLatencyMs),
    simSeed: Number(o.simSeed),
  };
  return def ? withInitServers(def, flags, env.userSet) : flags;
}

export function need(o: Resolved<OptionDefaults>, key: string, flag: string): string {
  const v = str(o[key]);
  if (!v) throw new Error(`${flag} is required (or set ${envVarName(key)})`);
  return v;
}

/** Runs `node ARGS` in the foreground, forwarding Ctrl-C; resolves with its exit code. */
export function runForeground(args: string[]): Promise<number> {
  const child = spawn(process.execPath, args, { cwd: process.cwd(), stdio: "inherit" });
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => child.kill(signal));
  }
  return new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? 0)));
}

/** `withOptions` with the `--env.*` / `--openai.*` flags of this invocation bound in. */
export type AddOptions = (
  cmd: Command,
  specs: OptionSpec[],
  action: (options: Resolved<OptionDefaults>, args: string[], env: EnvContext) => Promise<number>,
) => Command;

export function optionsWith(dotted: DottedFlags): AddOptions {
  return (cmd, specs, action) => withOptions(cmd, specs, action, dotted);
}
