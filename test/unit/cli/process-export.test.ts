import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runExport } from "../../../src/cli/export-command";
import { runProcess } from "../../../src/cli/process-command";

describe("process → export (in-process simulator)", () => {
  it("writes JSONL + HTML report, then exports SFT records from the file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cli-process-"));
    const out = join(dir, "letters.jsonl");
    const logs: string[] = [];
    const code = await runProcess(
      {
        env: "letter_counting",
        groups: 3,
        out,
        concurrency: 2,
        serverType: "vllm",
        model: "sim-policy",
        tokenizer: "qwen3",
        simLatencyMs: 0,
        simSeed: 1,
      },
      (l) => logs.push(l),
    );
    expect(code).toBe(0);
    const lines = readFileSync(out, "utf8").trim().split("\n");
    expect(lines).toHaveLength(3);
    const group = JSON.parse(lines[0]!);
    expect(group.tokens.length).toBe(group.scores.length);
    expect(group.env_id).toBeUndefined();
    const html = readFileSync(join(dir, "letters.html"), "utf8");
    expect(html).toContain("3 groups");
    expect(html).not.toContain("<script");

    const sft = join(dir, "sft.jsonl");
    const common = {
      run: "default",
      topN: 2,
      minScoreDiff: 0,
      allowNegativeScores: true,
      saveMessages: false,
      maxRecords: 0,
      maxGroups: 0,
      tokenizer: "qwen3",
      seed: 0,
      append: false,
    };
    await runExport({ ...common, kind: "sft", from: out, out: sft }, () => {});
    for (const line of readFileSync(sft, "utf8").trim().split("\n").filter(Boolean)) {
      expect(Object.keys(JSON.parse(line)).sort()).toEqual(["completion", "prefix", "score"]);
    }
    await expect(
      runExport({ ...common, kind: "sft", from: out, out: sft }, () => {}),
    ).rejects.toThrow(/exists; pass --append/);
    expect(existsSync(sft)).toBe(true);
  });

  it("process refuses to overwrite its output without --force", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cli-process-"));
    const out = join(dir, "letters.jsonl");
    writeFileSync(out, "keep me\n");
    const options = {
      env: "letter_counting",
      groups: 1,
      out,
      concurrency: 1,
      serverType: "vllm",
      model: "sim-policy",
      tokenizer: "qwen3",
      simLatencyMs: 0,
      simSeed: 1,
    };
    await expect(runProcess(options, () => {})).rejects.toThrow(
      `${out} exists; pass --force to overwrite or choose another --out`,
    );
    expect(readFileSync(out, "utf8")).toBe("keep me\n");
    expect(existsSync(join(dir, "letters.html"))).toBe(false);
    expect(await runProcess({ ...options, force: true }, () => {})).toBe(0);
    expect(readFileSync(out, "utf8").trim().split("\n")).toHaveLength(1);
  });
});
