import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runServe } from "../../../src/cli/serve-command";
import { startFakeAtropos } from "../runtime/fake-atropos";

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("serve", () => {
  it("says the rollout API cannot be reached, and what to check", async () => {
    const api = `http://127.0.0.1:${await closedPort()}`;
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
        () => {},
      );
      expect(code).toBe(0);
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
