/**
 * The CLI talks to each kind of inference server with one --server-type value: here the
 * simulator (which answers every kind's requests) stands in for each, over real HTTP.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openInference } from "../../../src/cli/inference";
import { runProcess } from "../../../src/cli/process-command";
import { SERVER_TYPES, type ServerType } from "../../../src/core/wire/server-config";
import { type Simulator, startSimulator } from "../../../src/sim/server";

/** The route each server type generates tokens on (text-only for openai). */
const TOKEN_ROUTE: Record<ServerType, string> = {
  // letter_counting samples chats: vllm renders them itself and returns the ids (no tokenizer).
  vllm: "POST /v1/chat/completions",
  "vllm-generate": "POST /inference/v1/generate",
  atropos: "POST /generate",
  sglang: "POST /generate",
  trl: "POST /generate/",
  openai: "POST /v1/chat/completions",
};

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ seed: 3 });
});
afterAll(() => sim.close());

const base = {
  model: "sim-policy",
  tokenizer: "qwen3",
  simLatencyMs: 0,
  simSeed: 1,
};

describe("process --inference-url <simulator> --server-type <each>", () => {
  for (const serverType of SERVER_TYPES) {
    it(serverType, async () => {
      const before = sim.stats().byRoute;
      const out = join(mkdtempSync(join(tmpdir(), `server-type-${serverType}-`)), "groups.jsonl");
      const logs: string[] = [];
      const code = await runProcess(
        {
          ...base,
          env: "letter_counting",
          groups: 2,
          out,
          concurrency: 1,
          serverType,
          inferenceUrl: `${sim.url}/v1`,
        },
        (line) => logs.push(line),
      );
      expect(code, logs.join("\n")).toBe(0);
      expect(logs.join("\n")).toContain(`${serverType} server at ${sim.url}/v1`);
      const groups = readFileSync(out, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { tokens: number[][]; inference_logprobs?: number[][] });
      expect(groups).toHaveLength(2);
      const after = sim.stats().byRoute;
      const route = TOKEN_ROUTE[serverType];
      expect((after[route] ?? 0) - (before[route] ?? 0), route).toBeGreaterThan(0);
      for (const group of groups) {
        if (serverType === "openai") continue; // text only: not token-exact
        for (const tokens of group.tokens) expect(tokens.length).toBeGreaterThan(0);
      }
    });
  }

  it("an unknown --server-type lists the values and what each one is", async () => {
    await expect(openInference({ ...base, serverType: "vllm-openai" })).rejects.toThrow(
      /unknown server type "vllm-openai"; use one of:\n {2}vllm .*\n {2}vllm-generate .*atropos/s,
    );
  });
});

describe("without --inference-url the in-process simulator is spoken to as --server-type", () => {
  for (const serverType of SERVER_TYPES) {
    it(serverType, async () => {
      const handle = await openInference({ ...base, serverType });
      try {
        expect(handle.describe).toContain(`spoken to as ${serverType}`);
        const server = handle.client.servers[0]!;
        expect(server.config.server_type).toBe(serverType);
        expect(server.backend.serverType).toBe(serverType);
        const chat = await handle.client.chatCompletion({
          messages: [{ role: "user", content: "How many r in strawberry?" }],
          n: 2,
          max_tokens: 32,
        });
        expect(chat.choices).toHaveLength(2);
      } finally {
        await handle.close();
      }
    });
  }
});
