/** `atropos-edge dev` (the API + dashboard via scripts/dev.mjs) and `atropos-edge bench api|envs`. */
import { join } from "node:path";
import type { Command } from "commander";
import { PROJECT_ROOT } from "../dev-process";
import { type AddOptions, opt, runForeground } from "./options";

export function registerDevCommands(program: Command, options: AddOptions): void {
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
}
