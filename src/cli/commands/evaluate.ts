/** `atropos-edge evaluate`: an env's evaluation once (evaluate-command.ts). */
import type { Command } from "commander";
import { type AddOptions, ENV_HELP, INFERENCE, inferenceFlags, need, opt } from "./options";

export function registerEvaluateCommand(program: Command, options: AddOptions): void {
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
      const { runEvaluate } = await import("../evaluate-command");
      const { def, config } = await envContext.loadEnv(need(o, "env", "--env"));
      return runEvaluate({
        ...inferenceFlags(o, envContext, def),
        env: def,
        envConfig: config,
        out: String(o.out),
      });
    },
  );
}
