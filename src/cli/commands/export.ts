/** `atropos-edge export sft|dpo|trajectories`: datasets from scored groups (export-command.ts). */
import type { Command } from "commander";
import { type AddOptions, need, opt, str } from "./options";

export function registerExportCommand(program: Command, options: AddOptions): void {
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
      const { runExport } = await import("../export-command");
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
}
