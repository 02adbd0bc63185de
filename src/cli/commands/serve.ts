/** `atropos-edge serve`: one env from Node against a rollout API (serve-command.ts). */
import type { Command } from "commander";
import { type AddOptions, ENV_HELP, INFERENCE, inferenceFlags, need, opt, str } from "./options";

export function registerServeCommand(program: Command, options: AddOptions): void {
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
      const { runServe } = await import("../serve-command");
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
}
