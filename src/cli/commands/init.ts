/** `atropos-edge init DIR` (scaffold a project) and `atropos-edge envs` (list the built-in envs). */
import type { Command } from "commander";

export function registerInitCommands(program: Command): void {
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
        const { runInit } = await import("../init-command");
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
      const { envRegistry } = await import("../../envs/index");
      for (const d of Object.values(envRegistry)) {
        console.log(
          `${d.name.padEnd(18)} group_size ${d.defaultConfig.group_size}  ${d.description}`,
        );
      }
    });
}
