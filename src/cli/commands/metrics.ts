/** `atropos-edge metrics` (a run's metrics as JSONL) and `atropos-edge wandb` (to W&B), both in metrics-command.ts. */
import type { Command } from "commander";
import { type AddOptions, need, opt, str } from "./options";

export function registerMetricsCommands(program: Command, options: AddOptions): void {
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
      const { exportMetrics } = await import("../metrics-command");
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
      const { runWandb } = await import("../metrics-command");
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
}
