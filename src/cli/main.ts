/**
 * atropos-edge command line. Every option can also come from an ATROPOS_EDGE_<NAME> env var or
 * a --config file (YAML/JSON, top level or a section per command, or Atropos' `env:`/`openai:`
 * layout); flags win, then env vars, then the file, then defaults. The env commands also take
 * Atropos' `--env.<field>` / `--openai.<field>` flags (docs/CONFIG.md).
 */
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { Command } from "commander";
import { SERVER_TYPES } from "../core/server-config";
import type { EnvDefinition } from "../env-workers/define-env";
import { createLocalSandbox } from "../env-workers/sandbox/node/local-sandbox";
import { setDefaultSandboxProvider } from "../env-workers/sandbox/registry";
import {
  type AtroposInput,
  atroposOptions,
  type DottedFlags,
  emptyAtroposInput,
  envConfigsFor,
  extractDottedFlags,
  type OptionScope,
  splitAtroposFile,
  withDottedFlags,
} from "./atropos-config";
import { loadConfigFile, type OptionDefaults, type Resolved, resolveOptions } from "./config";
import { withInitConfig, withInitServers } from "./config-init";
import { PROJECT_ROOT } from "./dev-process";
import { registerEngineCommand } from "./engine-command";
import { isEnvPath, loadEnvDefinition } from "./env-loader";
import { registerGuardCommand } from "./guard-command";
import { registerImportCommand } from "./import-command";
import { registerInferenceServersCommand } from "./inference-servers-command";
import { registerMixCommand } from "./mix-command";
import { registerReplayCommand } from "./replay-command";
import { registerTokenizeCommands } from "./tokenize-command";
import { chooseTokenizer } from "./tokenizer-choice";
import { registerTokensCommand } from "./tokens-command";
import { isTrainLayout, TRAIN_LAYOUT_KEYS } from "./train-config";

interface OptionSpec {
  flags: string;
  key: string;
  description: string;
  default: string | number | boolean | undefined;
}

const opt = (
  flags: string,
  key: string,
  description: string,
  fallback: string | number | boolean | undefined,
): OptionSpec => ({ flags, key, description, default: fallback });

const ENV_HELP =
  "built-in env name (see `atropos-edge envs`) or path to a module whose default export is defineEnv(...)";

const DEFAULT_START_ENVS = "gsm8k_lite,letter_counting";

/** `start`'s envs: `--env X` is a one-item `--envs X`; giving both is ambiguous, so an error. */
export function startEnvEntries(env: string | undefined, envs: string | undefined): string[] {
  if (env !== undefined && envs !== undefined) {
    throw new Error("give --env (one env) or --envs (a list), not both");
  }
  if (env !== undefined) return [env];
  return (envs ?? DEFAULT_START_ENVS)
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

const INFERENCE: OptionSpec[] = [
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
interface EnvContext {
  /** The --config file as the loader read it (train parses its own layout from it). */
  configFile: { path: string; contents: Record<string, unknown> } | null;
  atropos: AtroposInput;
  /** Whether the user set this option (flag, env var or config file), by option key. */
  userSet(optionKey: string): boolean;
  /** Loads `--env` values (names or paths) with the `env.*` config each one gets. */
  loadEnvs(namesOrPaths: string[]): Promise<LoadedEnv[]>;
  loadEnv(nameOrPath: string): Promise<LoadedEnv>;
}

interface LoadedEnv {
  def: EnvDefinition;
  config: Record<string, unknown>;
}

const warned = new Set<string>();
function warn(message: string): void {
  if (warned.has(message)) return;
  warned.add(message);
  console.error(`warning: ${message}`);
}

/** Adds `specs` + --config to `cmd`; the action gets fully resolved options. */
function withOptions<S extends OptionSpec[]>(
  cmd: Command,
  specs: S,
  action: (options: Resolved<OptionDefaults>, args: string[], env: EnvContext) => Promise<number>,
  dotted: DottedFlags = { env: {}, openai: {} },
): Command {
  for (const s of specs) {
    const shown = s.default === undefined || s.default === false ? "" : ` (default: ${s.default})`;
    cmd.option(s.flags, `${s.description}${shown}`);
  }
  cmd.option("--config <file>", "YAML or JSON file with options (env: ATROPOS_EDGE_CONFIG)");
  if (ENV_COMMANDS.includes(cmd.name())) {
    cmd.addHelpText(
      "after",
      "\nAtropos-style settings: --env.<field> VALUE (env config), --openai.<field> VALUE (inference\nserver), and --config files with env:/openai: sections; see docs/CONFIG.md.",
    );
  }
  cmd.action(async (...received: unknown[]) => {
    const command = received[received.length - 1] as Command;
    const args = received.slice(0, -2).map(String);
    const flags = command.opts() as Record<string, unknown>;
    const configPath = (flags.config as string | undefined) ?? process.env.ATROPOS_EDGE_CONFIG;
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
      flags: { ...mapped.flags, ...flags },
      env: process.env,
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

const str = (v: unknown): string | undefined =>
  v === undefined || v === "" ? undefined : String(v);

/** The inference options, under which the env's config_init servers fill what the user left unset. */
function inferenceFlags(o: Resolved<OptionDefaults>, env: EnvContext, def?: EnvDefinition) {
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

function need(o: Resolved<OptionDefaults>, key: string, flag: string): string {
  const v = str(o[key]);
  if (!v)
    throw new Error(
      `${flag} is required (or set ${flag.replace(/^--/, "ATROPOS_EDGE_").replace(/-/g, "_").toUpperCase()})`,
    );
  return v;
}

/** Runs `node ARGS` in the foreground, forwarding Ctrl-C; resolves with its exit code. */
function runForeground(args: string[]): Promise<number> {
  const child = spawn(process.execPath, args, { cwd: process.cwd(), stdio: "inherit" });
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => child.kill(signal));
  }
  return new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? 0)));
}

/** `dotted`: the `--env.*` / `--openai.*` flags taken out of argv (extractDottedFlags). */
export function buildProgram(dotted: DottedFlags = { env: {}, openai: {} }): Command {
  const program = new Command("atropos-edge")
    .description("atropos-edge: durable, exactly-once RL rollout API + environment runtime")
    .showHelpAfterError("(run with --help for every option)");
  const options: typeof withOptions = (cmd, specs, action) =>
    withOptions(cmd, specs, action, dotted);

  options(
    program
      .command("start")
      .description(
        "run the whole loop locally: API (local Worker), simulator, example envs, demo trainer",
      ),
    [
      opt("--steps <n>", "steps", "trainer steps before stopping", 20),
      opt("--port <port>", "port", "port of the local API", 8787),
      opt(
        "--env <name|path>",
        "env",
        `one env: ${ENV_HELP} (same as --envs with one item)`,
        undefined,
      ),
      opt(
        "--envs <list>",
        "envs",
        `comma-separated env names or paths to env modules (default: ${DEFAULT_START_ENVS})`,
        undefined,
      ),
      opt("--batch-size <n>", "batchSize", "trainer batch size in sequences", 32),
      opt("--max-token-len <n>", "maxTokenLen", "trainer max token length", 2048),
      opt(
        "--persist-to <dir>",
        "persistTo",
        "keep API state in this dir; default: fresh dir under .wrangler/, removed at exit",
        undefined,
      ),
      opt("--lease-seconds <s>", "leaseSeconds", "lease duration for each batch", 60),
      opt(
        "--workers",
        "workers",
        "run the envs on the Worker's queue path (EnvFeeder DOs + queue consumers) instead of in Node",
        false,
      ),
      opt(
        "--max-seconds <s>",
        "maxSeconds",
        "fail if the steps are not done in this time (0 = never)",
        0,
      ),
      opt(
        "--learning-rate <lr>",
        "learningRate",
        "step size of the simulator's toy policy updates (0 = weights never move)",
        0.3,
      ),
      opt(
        "--summary-json <file>",
        "summaryJson",
        "write the per-step learning curve as JSON",
        undefined,
      ),
      opt(
        "--max-failure-rate <share>",
        "maxFailureRate",
        "fail the run when more than this share of an env's items fail with an error",
        0.1,
      ),
      opt(
        "--allow-failures",
        "allowFailures",
        "succeed however many items fail (the summary still counts them)",
        false,
      ),
      ...INFERENCE,
    ],
    async (o, _args, env) => {
      const { runStart } = await import("./start");
      const { parseFailureRate } = await import("./failure-account");
      const entries = startEnvEntries(str(o.env), str(o.envs));
      const loaded = await env.loadEnvs(entries);
      return runStart({
        ...inferenceFlags(o, env, loaded[0]?.def),
        envDefinitions: loaded.map((l) => l.def),
        envModules: entries.map((e) => (isEnvPath(e) ? resolve(e) : null)),
        envConfigs: loaded.map((l) => l.config),
        steps: Number(o.steps),
        port: Number(o.port),
        envs: entries.join(","),
        batchSize: Number(o.batchSize),
        maxTokenLen: Number(o.maxTokenLen),
        persistTo: str(o.persistTo),
        leaseSeconds: Number(o.leaseSeconds),
        maxSeconds: Number(o.maxSeconds),
        workers: Boolean(o.workers),
        learningRate: Number(o.learningRate),
        summaryJson: str(o.summaryJson),
        maxFailureRate: parseFailureRate(o.maxFailureRate),
        allowFailures: Boolean(o.allowFailures),
      });
    },
  );

  options(
    program
      .command("train")
      .description(
        "start with one config file (training, trajectory_collection, judge, tasks, inference): the agent_tasks env, a judge panel, the API and the trainer",
      ),
    [
      opt("--steps <n>", "steps", "trainer steps (default: training.max_steps)", undefined),
      opt("--port <port>", "port", "port of the local API (default: api.port or 8787)", undefined),
      opt("--max-seconds <s>", "maxSeconds", "fail if not done in this time (0 = never)", 0),
      opt(
        "--summary-json <file>",
        "summaryJson",
        "write the per-step learning curve as JSON",
        undefined,
      ),
      opt(
        "--output <dir>",
        "output",
        "write the run's trajectories, metrics, summary, judge calibration and the toy policy's weights here",
        undefined,
      ),
      opt(
        "--engine <file.gguf>",
        "engine",
        "run this GGUF model on the llama.cpp engine in-process instead of the simulator (docs/INFERENCE.md)",
        undefined,
      ),
      opt("--sim-latency-ms <ms>", "simLatencyMs", "simulator latency per request", 0),
      opt("--sim-seed <n>", "simSeed", "simulator seed", 0),
    ],
    async (o, _args, env) => {
      if (!env.configFile) {
        throw new Error("train needs --config atropos_config.yaml (docs/JUDGES.md)");
      }
      const { runTrain } = await import("./train-command");
      return runTrain({
        configPath: env.configFile.path,
        file: env.configFile.contents,
        steps: str(o.steps) === undefined ? undefined : Number(o.steps),
        port: str(o.port) === undefined ? undefined : Number(o.port),
        maxSeconds: Number(o.maxSeconds),
        summaryJson: str(o.summaryJson),
        output: str(o.output),
        simLatencyMs: Number(o.simLatencyMs),
        simSeed: Number(o.simSeed),
      });
    },
  );

  options(
    program.command("sim").description("run the inference simulator (a test double, not a model)"),
    [
      opt("--port <port>", "port", "listen port", 9001),
      opt("--host <host>", "host", "listen address", "127.0.0.1"),
      opt("--tokenizer <name>", "tokenizer", "tokenizer short name", "qwen3"),
      opt("--model <name>", "model", "model name reported", "sim-policy"),
      opt("--seed <n>", "seed", "seed for deterministic outputs", 0),
      opt("--latency-ms <ms>", "latencyMs", "latency per request", 0),
      opt("--latency-jitter-ms <ms>", "latencyJitterMs", "random extra latency", 0),
      opt("--correct-probability <p>", "correctProbability", "chance an answer is correct", 0.5),
      opt("--error-rate <p>", "errorRate", "fraction of requests answered 500", 0),
      opt("--timeout-rate <p>", "timeoutRate", "fraction of requests that hang", 0),
    ],
    async (o) => {
      const { startSimulator } = await import("../sim/server");
      const sim = await startSimulator({
        host: String(o.host),
        port: Number(o.port),
        tokenizer: String(o.tokenizer),
        model: String(o.model),
        seed: Number(o.seed),
        latencyMs: Number(o.latencyMs),
        latencyJitterMs: Number(o.latencyJitterMs),
        correctProbability: Number(o.correctProbability),
        faults: { errorRate: Number(o.errorRate), timeoutRate: Number(o.timeoutRate) },
      });
      console.log(
        `inference simulator (test double) on ${sim.url} — use --inference-url ${sim.url}/v1; Ctrl-C stops`,
      );
      await new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
      });
      await sim.close();
      return 0;
    },
  );

  options(
    program.command("dev").description("serve the API + dashboard locally (wraps scripts/dev.mjs)"),
    [
      opt("--port <port>", "port", "port", 8787),
      opt("--persist-to <dir>", "persistTo", "state dir", ".wrangler/state"),
      opt("--watch", "watch", "use wrangler dev with live reload (slower per request)", false),
    ],
    (o) =>
      runForeground([
        join(PROJECT_ROOT, "scripts", "dev.mjs"),
        "--port",
        String(o.port),
        "--persist-to",
        String(o.persistTo),
        ...(o.watch ? ["--watch"] : []),
      ]),
  );

  program
    .command("bench")
    .description(
      "run a benchmark: `bench api [--quick] [--json FILE]` or `bench envs [--cpu-only]`",
    )
    .argument("<which>", "api or envs")
    .argument("[args...]", "options passed to the benchmark script")
    .allowUnknownOption(true)
    .action(async (which: string, args: string[]) => {
      if (which !== "api" && which !== "envs") {
        throw new Error(`unknown benchmark '${which}': use 'api' or 'envs'`);
      }
      process.exitCode = await runForeground([
        "--import",
        "tsx",
        join(PROJECT_ROOT, "bench", `${which}.bench.ts`),
        ...args,
      ]);
    });

  options(
    program
      .command("process")
      .description("offline rollouts of one env → JSONL + HTML report (no API)"),
    [
      opt("--env <name|path>", "env", ENV_HELP, undefined),
      opt("--groups <n>", "groups", "number of groups to produce", 8),
      opt("--out <file>", "out", "output JSONL (an .html report is written next to it)", undefined),
      opt("--concurrency <n>", "concurrency", "items rolled out in parallel", 4),
      opt("--group-size <n>", "groupSize", "override the env's group_size", 0),
      opt("--force", "force", "overwrite --out and its .html report if they exist", false),
      ...INFERENCE,
    ],
    async (o, _args, envContext) => {
      const { runProcess } = await import("./process-command");
      const { def, config } = await envContext.loadEnv(need(o, "env", "--env"));
      return runProcess({
        ...inferenceFlags(o, envContext, def),
        env: def,
        envConfig: config,
        groups: Number(o.groups),
        out: str(o.out) ?? `data/${def.name}.jsonl`,
        concurrency: Number(o.concurrency),
        groupSize: Number(o.groupSize) || undefined,
        force: Boolean(o.force),
      });
    },
  );

  options(
    program
      .command("evaluate")
      .description("run an env's evaluation once → DIR/metrics.json + DIR/samples.jsonl"),
    [
      opt("--env <name|path>", "env", ENV_HELP, undefined),
      opt("--out <dir>", "out", "output directory", "eval-results"),
      ...INFERENCE,
    ],
    async (o, _args, envContext) => {
      const { runEvaluate } = await import("./evaluate-command");
      const { def, config } = await envContext.loadEnv(need(o, "env", "--env"));
      return runEvaluate({
        ...inferenceFlags(o, envContext, def),
        env: def,
        envConfig: config,
        out: String(o.out),
      });
    },
  );

  options(
    program
      .command("export")
      .argument("<kind>", "sft, dpo or trajectories")
      .description(
        "build an SFT or DPO dataset, or export trajectories, from scored groups (a JSONL file, or the API read-only)",
      ),
    [
      opt(
        "--from <file>",
        "from",
        "JSONL of groups (from `process` or data_path_to_save_groups)",
        undefined,
      ),
      opt(
        "--api <url>",
        "api",
        "rollout API URL; read-only (GET /v1/runs/{run}/groups)",
        undefined,
      ),
      opt("--run <name>", "run", "run name (with --api)", "default"),
      opt("--token <t>", "token", "bearer token (with --api)", undefined),
      opt("--out <file>", "out", "output JSONL", undefined),
      opt("--top-n <n>", "topN", "sft: sequences kept per group; dpo: pairs per group", 3),
      opt(
        "--min-score-diff <x>",
        "minScoreDiff",
        "sft: keep score − min > x (default 0); dpo: neg < pos − x (default 0.5)",
        undefined,
      ),
      opt(
        "--allow-negative-scores",
        "allowNegativeScores",
        "also keep sequences with score ≤ 0",
        false,
      ),
      opt(
        "--save-messages",
        "saveMessages",
        "write chat messages instead of prefix/completion text",
        false,
      ),
      opt("--max-records <n>", "maxRecords", "stop after this many records (0 = all)", 0),
      opt(
        "--max-groups <n>",
        "maxGroups",
        "read at most this many groups from the API (0 = all)",
        0,
      ),
      opt("--seed <n>", "seed", "seed for dpo negative sampling", 0),
      opt("--append", "append", "append to --out if it exists", false),
      opt("--tokenizer <name>", "tokenizer", "tokenizer to decode tokens (text mode)", "qwen3"),
    ],
    async (o, args) => {
      const kind = args[0];
      if (kind !== "sft" && kind !== "dpo" && kind !== "trajectories") {
        throw new Error("export kind must be sft, dpo or trajectories");
      }
      const { runExport } = await import("./export-command");
      const diff =
        o.minScoreDiff === undefined ? (kind === "sft" ? 0 : 0.5) : Number(o.minScoreDiff);
      if (!Number.isFinite(diff)) throw new Error("--min-score-diff must be a number");
      return runExport({
        kind,
        from: str(o.from),
        api: str(o.api),
        run: String(o.run),
        token: str(o.token),
        out: need(o, "out", "--out"),
        topN: Number(o.topN),
        minScoreDiff: diff,
        allowNegativeScores: Boolean(o.allowNegativeScores),
        saveMessages: Boolean(o.saveMessages),
        maxRecords: Number(o.maxRecords),
        maxGroups: Number(o.maxGroups),
        tokenizer: String(o.tokenizer),
        seed: Number(o.seed),
        append: Boolean(o.append),
      });
    },
  );

  options(
    program
      .command("metrics")
      .description(
        "export a run's metrics (GET /v1/runs/{run}/metrics) as JSONL, one value a line",
      ),
    [
      opt("--api <url>", "api", "rollout API URL", "http://127.0.0.1:8787"),
      opt("--run <name>", "run", "run name", "default"),
      opt("--token <t>", "token", "bearer token for the API", undefined),
      opt("--name <names>", "name", "comma-separated metric names (`eval/*`: a prefix)", undefined),
      opt("--out <file>", "out", "output JSONL", undefined),
    ],
    async (o) => {
      const { exportMetrics } = await import("./metrics-command");
      return exportMetrics({
        api: String(o.api),
        run: String(o.run),
        token: str(o.token),
        name: str(o.name),
        out: need(o, "out", "--out"),
      });
    },
  );

  options(
    program
      .command("wandb")
      .description(
        "log a run's metrics to W&B as Atropos does (one W&B run per env, its group and project from /register)",
      ),
    [
      opt("--api <url>", "api", "rollout API URL", "http://127.0.0.1:8787"),
      opt("--run <name>", "run", "run name", "default"),
      opt("--token <t>", "token", "bearer token for the API", undefined),
      opt(
        "--wandb-base-url <url>",
        "wandbBaseUrl",
        "W&B server",
        process.env.WANDB_BASE_URL ?? "https://api.wandb.ai",
      ),
      opt(
        "--wandb-entity <name>",
        "wandbEntity",
        "W&B entity (default: the key's)",
        process.env.WANDB_ENTITY,
      ),
      opt("--interval <s>", "interval", "seconds between syncs", 15),
      opt("--once", "once", "log everything there is now, finish the W&B runs and exit", false),
    ],
    async (o) => {
      const apiKey = process.env.WANDB_API_KEY;
      // As the wandb SDK: WANDB_MODE=offline (or dryrun) writes run directories, no key needed.
      const offline = ["offline", "dryrun"].includes(process.env.WANDB_MODE ?? "");
      if (!apiKey && !offline) {
        throw new Error(
          "set WANDB_API_KEY (your W&B API key) to log to W&B, or WANDB_MODE=offline to write run directories for `wandb sync`",
        );
      }
      const { runWandb } = await import("./metrics-command");
      return runWandb({
        api: String(o.api),
        run: String(o.run),
        token: str(o.token),
        wandbBaseUrl: String(o.wandbBaseUrl),
        wandbApiKey: apiKey ?? "",
        entity: str(o.wandbEntity),
        offlineDir: offline ? (process.env.WANDB_DIR ?? process.cwd()) : undefined,
        intervalS: Number(o.interval),
        once: Boolean(o.once),
      });
    },
  );

  options(
    program
      .command("serve")
      .description("run one env from Node against a rollout API (Atropos `env.py serve`)"),
    [
      opt("--env <name|path>", "env", ENV_HELP, undefined),
      opt("--api <url>", "api", "rollout API URL", "http://127.0.0.1:8787"),
      opt("--run <name>", "run", "run name", "default"),
      opt("--token <t>", "token", "bearer token for the API", undefined),
      opt("--group-size <n>", "groupSize", "override the env's group_size", 0),
      opt("--max-num-workers <n>", "maxNumWorkers", "groups in flight (default: env config)", 0),
      ...INFERENCE,
    ],
    async (o, _args, envContext) => {
      const { runServe } = await import("./serve-command");
      const { def, config } = await envContext.loadEnv(need(o, "env", "--env"));
      return runServe({
        ...inferenceFlags(o, envContext, def),
        env: def,
        envConfig: config,
        api: String(o.api),
        run: String(o.run),
        token: str(o.token),
        groupSize: Number(o.groupSize) || undefined,
        maxNumWorkers: Number(o.maxNumWorkers) || undefined,
      });
    },
  );

  program
    .command("init")
    .description("scaffold a project with your own env, Worker entry, tests and wrangler config")
    .argument("<dir>", "directory to create (must be empty or new)")
    .option("--name <name>", "project name (Worker, D1, R2 and queue names); default: dir name")
    .option(
      "--atropos-edge <spec>",
      "what package.json depends on: a version, or a tarball path for offline installs",
    )
    .option("--force", "write into a non-empty directory")
    .action(
      async (dir: string, flags: { name?: string; atroposEdge?: string; force?: boolean }) => {
        const { runInit } = await import("./init-command");
        process.exitCode = runInit({
          dir,
          name: flags.name,
          atroposEdgeSpec: flags.atroposEdge,
          force: flags.force,
        });
      },
    );

  program
    .command("envs")
    .description("list the available envs")
    .action(async () => {
      const { envRegistry } = await import("../envs/index");
      for (const d of Object.values(envRegistry)) {
        console.log(
          `${d.name.padEnd(18)} group_size ${d.defaultConfig.group_size}  ${d.description}`,
        );
      }
    });
  registerTokenizeCommands(program);
  registerTokensCommand(program);
  registerInferenceServersCommand(program);
  registerEngineCommand(program);
  registerMixCommand(program);
  registerReplayCommand(program);
  registerImportCommand(program);
  registerGuardCommand(program);
  return program;
}

const isEntry = process.argv[1] && /[\\/]cli[\\/]main\.[cm]?[tj]s$/.test(process.argv[1]);
if (isEntry || process.env.ATROPOS_EDGE_BIN === "1") {
  try {
    // Envs that execute code get the local sandbox, started on their first run.
    setDefaultSandboxProvider(() => createLocalSandbox());
    const { argv, dotted } = extractDottedFlags(process.argv);
    await buildProgram(dotted).parseAsync(argv);
  } catch (err) {
    console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  }
  // Keep-alive sockets and timers of finished work must not keep the CLI alive.
  process.exit(process.exitCode ?? 0);
}
