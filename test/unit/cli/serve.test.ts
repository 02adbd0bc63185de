import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { runServe } from "../../../src/cli/serve-command";

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
