/** `atropos-edge process`: offline rollouts of one env to JSONL + HTML (process-command.ts). */
import type { Command } from "commander";
import { type AddOptions, ENV_HELP, INFERENCE, inferenceFlags, need, opt, str } from "./options";

export function registerProcessCommand(program: Command, options: AddOptions): void {
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
      const { runProcess } = await import("../process-command");
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
}
