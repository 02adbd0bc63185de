import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { freePort } from "../../../scripts/ports.mjs";
import { runServe, serveSummaryLine, stopsWhen } from "../../../src/cli/serve-command";
import { startFakeAtropos } from "../runtime/fake-atropos";

describe("serve", () => {
  it("says the rollout API cannot be reached, and what to check", async () => {
    const api = `http://127.0.0.1:${await freePort()}`;
    const lines: string[] = [];
    await expect(
      runServe(
        {
          env: "letter_counting",
          api,
          run: "default",
          serverType: "vllm",
          model: "sim-policy",
          tokenizer: "qwen3",
          simLatencyMs: 0,
          simSeed: 1,
        },
        (line) => lines.push(line),
      ),
    ).rejects.toThrow(`cannot reach the rollout API at ${api} (ECONNREFUSED)`);
    expect(lines[0]).toContain(`serving letter_counting → ${api}`);
  }, 30_000);
});

describe("serve with data_path_to_save_groups", () => {
  it("appends every submitted group to a fresh JSONL and talks to env.rollout_server_url", async () => {
    const api = await startFakeAtropos({ batchSize: 8 });
    const dir = mkdtempSync(join(tmpdir(), "serve-save-"));
    const path = join(dir, "groups.jsonl");
    writeFileSync(path, "existing\n");
    const lines: string[] = [];
    try {
      const code = await runServe(
        {
          env: "letter_counting",
          envConfig: { data_path_to_save_groups: path, total_steps: 2 },
          api: api.url,
          run: "default",
          serverType: "vllm",
          model: "sim-policy",
          tokenizer: "qwen3",
          simLatencyMs: 0,
          simSeed: 1,
        },
        (line) => lines.push(line),
      );
      expect(code).toBe(0);
      // When it will stop, said before it starts and once registered; why it stopped at the end.
      expect(lines[1]).toBe(stopsWhen(2));
      expect(lines[1]).toContain("batches queued pass total_steps 2 (env.total_steps");
      expect(lines.find((l) => l.startsWith("registered as env_id"))).toMatch(
        /stops once the trainer's step plus the batches queued pass 2$/,
      );
      expect(lines.at(-1)).toMatch(
        /^stopped at trainer step \d+ \(the trainer's step plus the batches queued passed total_steps\): \d+ groups submitted, \d+ dropped/,
      );
      expect(readFileSync(path, "utf8")).toBe("existing\n");
      const saved = readFileSync(join(dir, "groups_1.jsonl"), "utf8").trim().split("\n");
      expect(api.state.accepted).toBeGreaterThan(0);
      expect(saved).toHaveLength(api.state.accepted);
      expect(JSON.parse(saved[0]!).tokens.length).toBe(4);
    } finally {
      await api.close();
    }
  }, 60_000);
});

describe("serve's summary line", () => {
  it("gives the drop reasons, most frequent first, and the failures", () => {
    const line = serveSummaryLine({
      envId: 0,
      exitReason: "aborted",
      finalStep: 7,
      groupsSubmitted: 40,
      groupsDropped: 5,
      submitFailures: 1,
      workerErrors: 2,
      dropReasons: { "all scores identical": 1, "group has N sequences, expected N": 4 },
      evaluations: [],
    });
    expect(line).toBe(
      "stopped at trainer step 7 (stopped by signal): 40 groups submitted, 5 dropped (4× group has N sequences, expected N; 1× all scores identical), 2 items failed with an error, 1 submissions refused",
    );
    expect(stopsWhen(-1)).toContain("num_steps it registered with");
  });
});
