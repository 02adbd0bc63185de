/**
 * `atropos-edge start --steps 3` against fresh state: npm run dev + simulator + envs + demo
 * trainer, finishing with exit 0, a summary, and no process left behind.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { LearningSummary } from "../../src/cli/learning-summary";
import { freePort, ROOT, runCli } from "./harness";

/** Command lines of live processes containing `text`, read from /proc (no procps needed). */
function processesMentioning(text: string): string[] {
  const found: string[] = [];
  const own = String(process.pid);
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name) && name !== own)) {
    let args: string;
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
    } catch {
      continue; // exited while we looked
    }
    if (args.includes(text)) found.push(`${pid} ${args}`);
  }
  return found;
}

/** Processes still mentioning `text` once the OS has reaped them (polled up to 0.5 s, as long as the fixed wait was). */
async function processesLeft(text: string): Promise<string[]> {
  for (let i = 0; i < 5; i++) {
    const left = processesMentioning(text);
    if (left.length === 0) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
  return processesMentioning(text);
}

describe("atropos-edge start", () => {
  it("runs 3 steps on fresh state, prints a summary, exits 0 and leaves no children", async () => {
    const port = await freePort();
    const { code, output } = await runCli([
      "start",
      "--steps",
      "3",
      "--port",
      String(port),
      "--max-seconds",
      "100",
    ]);
    expect(code, output).toBe(0);
    expect(output).toContain("atropos-edge start: summary");
    expect(output).toContain(`(dashboard http://127.0.0.1:${port}/dashboard/)`);
    // The dev server's start-up shown as it happens (a fresh state: every migration), before
    // the API line and without its own "ready" line.
    const apiLine = output.indexOf("API http://");
    const migrated = output.search(
      / {2}dev: D1 migrations applied: 0000_init\.sql … \S+ \(\d+\) in \d+ ms/,
    );
    expect(migrated, output).toBeGreaterThan(output.indexOf("  dev: bundling the Worker"));
    expect(apiLine).toBeGreaterThan(migrated);
    expect(output).not.toContain("dev: ready on");
    expect(output).toMatch(/steps trained\s+3\/3/);
    expect(output).toMatch(/shape problems\s+0/);
    expect(output).toMatch(/env gsm8k_lite\s+\S+\s+submitted [1-9]\d* groups/);
    // The rise per env, and the progress mean labelled recent vs cumulative.
    expect(output).toMatch(/rise per env\s+mean score \/ accuracy, first steps → last steps:/);
    expect(output).toMatch(/ {2}gsm8k_lite\s+\S+ \/ \S+ \(step 1\) → \S+ \/ \S+ \(step 3\)/);
    expect(output).toMatch(/mean score \S+ last 10 steps, \S+ cumulative/);
    expect(output).toMatch(/failed items\s+0 of [1-9]\d*/);
    // wrangler/workerd of this run were stopped with their process group.
    expect(await processesLeft(`--port ${port}`)).toEqual([]);
  });

  it("--workers runs the envs on the Worker's queue path, then stops the feeders", async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "cli-workers-"));
    const summaryFile = join(dir, "curve.json");
    const { code, output } = await runCli([
      "start",
      "--workers",
      "--steps",
      "2",
      "--port",
      String(port),
      "--max-seconds",
      "100",
      "--summary-json",
      summaryFile,
    ]);
    expect(code, output).toBe(0);
    // The learning curve is not silently empty: it counts the leased groups' rollouts, and says so.
    expect(output).toContain(
      "note: with --workers, --summary-json counts the rollouts of the groups",
    );
    const curve = JSON.parse(readFileSync(summaryFile, "utf8")) as LearningSummary;
    rmSync(dir, { recursive: true, force: true });
    expect(Object.keys(curve.envs).sort()).toEqual(["gsm8k_lite", "letter_counting"]);
    for (const step of [0, 1]) {
      const rollouts = Object.values(curve.envs).map((e) => e.steps[step]!.rollouts);
      expect(
        rollouts.reduce((a, b) => a + b, 0),
        JSON.stringify(curve),
      ).toBeGreaterThan(0);
    }
    expect(curve.policy_versions.pushes).toBe(2);
    expect(output).toContain("on the Worker's queue path");
    expect(output).toMatch(/steps trained\s+2\/2/);
    expect(output).toMatch(/shape problems\s+0/);
    // Live progress showed the feeders' status.
    expect(output).toMatch(/ gsm8k_lite\s+(running|waiting_for_trainer)\s+submitted \d+ groups/);
    expect(output).toMatch(/env gsm8k_lite\s+\S+\s+submitted [1-9]\d* groups/);
    // The Worker's feeders' counts feed the failed-items line too.
    expect(output).toMatch(/failed items\s+0 of [1-9]\d*/);
    // Stopped on exit, before the API went down; the last progress block and the summary show
    // the same counts (one final snapshot).
    const lastBlock = output.split("\n").findLast((l) => l.startsWith("step ")) ?? "";
    for (const env of ["gsm8k_lite", "letter_counting"]) {
      const summary = new RegExp(
        `^env (${env}\\s+stopped\\s+submitted \\d+ groups .*items on the Worker: issued \\d+.*)$`,
        "m",
      ).exec(output);
      expect(summary, output).not.toBeNull();
      expect(lastBlock).toContain(summary![1]);
      // The counts add up: every item that ran stored its group or had it rejected; an item
      // still in flight at the stop may have stored its group before reporting.
      const counts =
        /submitted (\d+) groups .*in flight (\d+), ran (\d+) \((\d+) groups? rejected\)/.exec(
          summary![1]!,
        );
      expect(counts, summary![1]).not.toBeNull();
      const [submitted, inFlight, ran, rejected] = counts!.slice(1).map(Number) as [
        number,
        number,
        number,
        number,
      ];
      expect(submitted).toBeGreaterThanOrEqual(ran - rejected);
      expect(submitted).toBeLessThanOrEqual(ran - rejected + inFlight);
    }
    expect(await processesLeft(`--port ${port}`)).toEqual([]);
  });

  it("refuses a port another server holds instead of talking to that server", async () => {
    const port = await freePort();
    const squatter = createServer((_req, res) => res.end('{"message":"AtroposLib API"}'));
    await new Promise<void>((resolve) => squatter.listen(port, "127.0.0.1", resolve));
    try {
      const { code, output } = await runCli(["start", "--steps", "1", "--port", String(port)]);
      expect(code).toBe(1);
      expect(output).toContain(`port ${port} on 127.0.0.1 is already in use`);
      expect(output).not.toMatch(/steps trained\s+1\/1/);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });

  it("stops with the env's error when its code fails item after item", async () => {
    const dir = mkdtempSync(join(tmpdir(), "buggy-env-"));
    const sdk = JSON.stringify(join(ROOT, "src", "sdk", "env.ts"));
    writeFileSync(
      join(dir, "buggy.ts"),
      [
        `import { BaseEnv, BaseEnvConfigSchema, defineEnv } from ${sdk};`,
        "class BuggyEnv extends BaseEnv<number> {",
        '  static override envName = "buggy";',
        "  private next = 0;",
        "  override async getNextItem() { return this.next++; }",
        "  override async collectTrajectory(): Promise<[never, number[]]> {",
        "    const reward = undefined as unknown as { score: number };",
        "    return [reward.score as never, []];",
        "  }",
        "}",
        'export default defineEnv(BuggyEnv, BaseEnvConfigSchema, "fails on every item", {',
        '  simulate: () => ({ match: "x", candidates: [{ text: "a" }] }),',
        "});",
        "",
      ].join("\n"),
    );
    try {
      const port = await freePort();
      const { code, output } = await runCli(
        ["start", "--env", join(dir, "buggy.ts"), "--steps", "3", "--port", String(port)],
        { boundMs: 90_000 },
      );
      expect(code, output).toBe(1);
      expect(output).toMatch(
        /FAILED: buggy: \d+ items in a row failed with an error in the env's code \(last: .*undefined/,
      );
      expect(output).toMatch(/failed \d+ of \d+ items \(100\.0%\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("fails a run where over 10 % of items throw, naming the error's file:line; --allow-failures accepts it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flaky-env-"));
    const sdk = JSON.stringify(join(ROOT, "src", "sdk", "env.ts"));
    const file = join(dir, "flaky.ts");
    const lines = [
      `import { BaseEnv, BaseEnvConfigSchema, defineEnv, mergeIntoGroup, sampleChat, scoredItemFromNode } from ${sdk};`,
      'const question = (n: number) => "What is " + n + " + 1? Reply with the number only.";',
      "class FlakyEnv extends BaseEnv<number> {",
      '  static override envName = "flaky";',
      "  private next = 0;",
      "  override async getNextItem() { return this.next++; }",
      "  override async collectTrajectories(n: number) {",
      '    if (n % 2 === 1) throw new Error("flaky: odd items are not handled");',
      '    const choices = await sampleChat(this.inference, this.tokenizer, [{ role: "user", content: question(n) }], { n: this.config.group_size, max_tokens: 8 });',
      "    const rollouts = choices.map((c) => scoredItemFromNode(c.node, c.text.trim() === String(n + 1) ? 1 : 0, { tokenizer: this.tokenizer, messages: c.messages }));",
      "    return [mergeIntoGroup(rollouts), []] as const satisfies [unknown, number[]];",
      "  }",
      "}",
      'export default defineEnv(FlakyEnv, BaseEnvConfigSchema, "fails on odd items", {',
      "  simulate: (n: number) => ({ match: question(n), candidates: [{ text: String(n + 1) }, { text: String(n) }] }),",
      "});",
      "",
    ];
    writeFileSync(file, lines.join("\n"));
    // As in a project made by init: an ESM package, so the stack names the .ts file and line.
    writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
    const throwLine = lines.findIndex((l) => l.includes("throw new Error")) + 1;
    const args = ["start", "--env", file, "--steps", "2", "--batch-size", "16"];
    try {
      const failed = await runCli([...args, "--port", String(await freePort())], {
        boundMs: 120_000,
      });
      expect(failed.code, failed.output).toBe(1);
      // The error, where it was thrown, and how many items it took.
      expect(failed.output).toMatch(
        new RegExp(
          `FAILED: flaky: \\d+ of \\d+ items failed \\([3-7]\\d\\.\\d%\\), flaky: odd items are not handled \\(at ${file.replaceAll("/", "\\/").replaceAll(".", "\\.")}:${throwLine}\\)`,
        ),
      );
      expect(failed.output).toContain("--allow-failures");
      expect(failed.output).toMatch(/failed items\s+\d+ of \d+ \([3-7]\d\.\d%\)/);
      expect(failed.output).toMatch(/mean score\s+\S+ \(successful items only/);
      // The progress lines show the share as it goes.
      expect(failed.output).toMatch(/failed \d+ of \d+ items \(\d+\.\d%\)/);

      const allowed = await runCli(
        [...args, "--allow-failures", "--port", String(await freePort())],
        { boundMs: 120_000 },
      );
      expect(allowed.code, allowed.output).toBe(0);
      expect(allowed.output).toMatch(/failed items\s+[1-9]\d* of \d+/);
      expect(allowed.output).not.toContain("FAILED");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it("explains a bad option instead of starting anything", async () => {
    const { code, output } = await runCli(["start", "--steps", "many"], { boundMs: 30_000 });
    expect(code).toBe(1);
    expect(output).toMatch(/'steps' must be a number/);
  });
});
