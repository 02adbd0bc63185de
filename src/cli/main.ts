/**
 * atropos-edge command line. Every option can also come from an ATROPOS_EDGE_<NAME> env var
 * (commander reads it; `--help` names it) or a --config file (YAML/JSON, top level or a section per command, or Atropos' `env:`/`openai:`
 * layout); flags win, then env vars, then the file, then defaults. The env commands also take
 * Atropos' `--env.<field>` / `--openai.<field>` flags (docs/CONFIG.md).
 */
import { Command } from "commander";
import { errorMessage } from "../core/errors";
import { createLocalSandbox } from "../sandbox/node/local-sandbox";
import { setDefaultSandboxProvider } from "../sandbox/registry";
import { type DottedFlags, extractDottedFlags } from "./atropos-config";
import { registerDevCommands } from "./commands/dev";
import { registerEvaluateCommand } from "./commands/evaluate";
import { registerExportCommand } from "./commands/export";
import { registerInitCommands } from "./commands/init";
import { registerMetricsCommands } from "./commands/metrics";
import { optionsWith } from "./commands/options";
import { registerProcessCommand } from "./commands/process";
import { registerServeCommand } from "./commands/serve";
import { registerSimCommand } from "./commands/sim";
import { registerStartCommand } from "./commands/start";
import { registerTrainCommand } from "./commands/train";
import { registerEngineCommand } from "./engine-command";
import { registerGuardCommand } from "./guard-command";
import { registerImportCommand } from "./import-command";
import { registerInferenceServersCommand } from "./inference-servers-command";
import { registerMixCommand } from "./mix-command";
import { registerReplayCommand } from "./replay-command";
import { registerTokenizeCommands } from "./tokenize-command";
import { registerTokensCommand } from "./tokens-command";

/** `dotted`: the `--env.*` / `--openai.*` flags taken out of argv (extractDottedFlags). */
export function buildProgram(dotted: DottedFlags = { env: {}, openai: {} }): Command {
  const program = new Command("atropos-edge")
    .description("atropos-edge: durable, exactly-once RL rollout API + environment runtime")
    .showHelpAfterError("(run with --help for every option)");
  // Each command registers itself from its own module, in the order `--help` lists them.
  const options = optionsWith(dotted);
  registerStartCommand(program, options);
  registerTrainCommand(program, options);
  registerSimCommand(program, options);
  registerDevCommands(program, options);
  registerProcessCommand(program, options);
  registerEvaluateCommand(program, options);
  registerExportCommand(program, options);
  registerMetricsCommands(program, options);
  registerServeCommand(program, options);
  registerInitCommands(program);
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
    console.error(`error: ${errorMessage(err)}`);
    process.exitCode = 1;
  }
  // Keep-alive sockets and timers of finished work must not keep the CLI alive.
  process.exit(process.exitCode ?? 0);
}
