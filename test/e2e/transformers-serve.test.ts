/**
 * `transformers serve` (pip: transformers[serving]) is a real text-only OpenAI-compatible server:
 * `--server-type openai` runs an env against it (no token ids, so not training data), and
 * `--server-type vllm` is refused with a 422 whose error names the server type to use.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runProcess } from "../../src/cli/process-command";
import { ServerManager } from "../../src/inference/server-manager";
import { enginePython, TINY_TOKENIZER, type TinyModel, tinyModel } from "./engine-fixture";
import { freePort } from "./harness";

describe("transformers serve as the `openai` server type", () => {
  let server: ChildProcess;
  let url: string;
  let model: TinyModel;
  beforeAll(async () => {
    // The engine tests' venv has transformers[serving] (examples/python/requirements-engine.txt).
    const [python, tiny, port] = await Promise.all([
      enginePython(),
      tinyModel("qwen2"),
      freePort(),
    ]);
    model = tiny;
    const bin = join(dirname(python), "transformers");
    const cache = mkdtempSync(join(tmpdir(), "hf-cache-"));
    server = spawn(
      bin,
      ["serve", model.hfDir, "--host", "127.0.0.1", "--port", String(port), "--device", "cpu"],
      {
        env: { ...process.env, HF_HUB_OFFLINE: "1", HF_HUB_CACHE: cache },
        stdio: ["ignore", "inherit", "inherit"],
      },
    );
    url = `http://127.0.0.1:${port}`;
    // Bounded: up to 180 s for torch to import and the model to load.
    for (let i = 0; i < 360; i++) {
      const ok = await fetch(`${url}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      if (server.exitCode !== null)
        throw new Error(`transformers serve exited with ${server.exitCode}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error("transformers serve did not answer /health within 180 s");
  }, 900_000);
  afterAll(() => {
    server?.kill("SIGTERM");
  });

  it("--server-type openai: an env runs on its text (one choice per request: `n` is ignored there)", async () => {
    const out = join(mkdtempSync(join(tmpdir(), "tf-serve-")), "groups.jsonl");
    const logs: string[] = [];
    const code = await runProcess(
      {
        env: "letter_counting",
        envConfig: { max_token_length: 8, ensure_scores_are_not_same: false },
        groupSize: 2,
        groups: 1,
        out,
        concurrency: 1,
        serverType: "openai",
        inferenceUrl: `${url}/v1`,
        model: model.hfDir,
        tokenizer: TINY_TOKENIZER,
        simLatencyMs: 0,
        simSeed: 0,
      },
      (line) => logs.push(line),
    );
    expect(code, logs.join("\n")).toBe(0);
    expect(logs.join("\n")).toContain(`openai server at ${url}/v1`);
    expect(readFileSync(out, "utf8").trim().split("\n")).toHaveLength(1);
  });

  it("--server-type vllm: the 422 for return_token_ids names --server-type openai", async () => {
    const manager = new ServerManager([
      {
        base_url: `${url}/v1`,
        server_type: "vllm",
        model_name: model.hfDir,
        tokenizer_name: TINY_TOKENIZER,
      },
    ]);
    await expect(
      manager.tokensAndLogprobsCompletion({ prompt: "hi", max_tokens: 4 }),
    ).rejects.toThrow(
      /answered 422: .*use --server-type openai for a text-only OpenAI-compatible server such as `transformers serve`/s,
    );
  });
});
