/**
 * Atropos' config_init: an env class' `static configInit()` declares its default config and
 * inference servers; the real CLI (bin/atropos-edge.mjs) uses them unless config files or flags
 * say otherwise (CLI > config file > config_init). The declared server is a simulator this test
 * starts on its own port.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withInitServers } from "../../../src/cli/config-init";
import type { InferenceFlags } from "../../../src/cli/inference";
import type { EnvDefinition } from "../../../src/env-sdk/define-env";
import { type Simulator, startSimulator } from "../../../src/sim/server";

const ROOT = resolve(import.meta.dirname, "../../..");
const BIN = join(ROOT, "bin", "atropos-edge.mjs");
const src = (path: string) => JSON.stringify(join(ROOT, "src", path));

const TINY_ENV = `
import { BaseEnv, BaseEnvConfigSchema, defineEnv } from ${src("sdk/env.ts")};

class TinyEnv extends BaseEnv<number> {
  static override envName = "tiny_env";
  static override configInit() {
    return {
      env: { group_size: 3, max_token_length: 64 },
      servers: [{ base_url: process.env.INIT_SERVER_URL, model_name: "init-model", server_type: "openai", timeout: 30 }],
    };
  }
  private next = 0;
  private rollouts = 0;
  override async getNextItem() {
    return this.next++;
  }
  override async collectTrajectory(item: number): Promise<[any, number[]]> {
    const prompt = "Say a word about " + item;
    const res = await this.inference.chatCompletion({
      messages: [{ role: "user", content: prompt }],
      n: 1,
      max_tokens: 16,
    });
    const promptTokens = this.tokenizer.encode(prompt);
    const answer = this.tokenizer.encode(res.choices[0]?.message.content ?? "");
    return [
      {
        tokens: [...promptTokens, ...answer],
        masks: [...promptTokens.map(() => -100), ...answer],
        scores: this.rollouts++ % 2 === 0 ? 1 : -1,
      },
      [],
    ];
  }
}

export default defineEnv(TinyEnv, BaseEnvConfigSchema, "a tiny test env", {
  simulate: (item: number) => ({
    match: "Say a word about " + item,
    candidates: [{ text: "apple" }, { text: "pear" }],
  }),
});
`;

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], cwd: string, env: Record<string, string> = {}): Promise<CliResult> {
  // Typed as the child's environment: the generated Worker types declare the Worker's vars on
  // ProcessEnv (wrangler fills process.env from them in a Worker), which a Node child need not have.
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("ATROPOS_EDGE_")),
  ) as NodeJS.ProcessEnv;
  return new Promise((done) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd, env: { ...clean, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? Number((error as { code?: number }).code ?? 1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ port: 0, model: "init-model" });
});
afterAll(() => sim?.close());

function workdir(): string {
  const dir = mkdtempSync(join(tmpdir(), "cli-config-init-"));
  writeFileSync(join(dir, "tiny_env.ts"), TINY_ENV);
  return dir;
}

const sizes = (file: string) =>
  readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((l) => (JSON.parse(l) as { tokens: number[][] }).tokens.length);

describe("config_init (static configInit)", () => {
  it("supplies the env's config and its inference server when nothing else is set", async () => {
    const dir = workdir();
    const r = await cli(
      ["process", "--env", "./tiny_env.ts", "--groups", "1", "--out", "out.jsonl"],
      dir,
      { INIT_SERVER_URL: `${sim.url}/v1` },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`openai server at ${sim.url}/v1 (model init-model)`);
    expect(sizes(join(dir, "out.jsonl"))).toEqual([3]);
  }, 60_000);

  it("a config file overrides it, and flags override both", async () => {
    const dir = workdir();
    writeFileSync(
      join(dir, "cfg.yaml"),
      "env:\n  group_size: 4\nopenai:\n  model_name: file-model\n",
    );
    const env = { INIT_SERVER_URL: `${sim.url}/v1` };
    const fromFile = await cli(
      [
        "process",
        "--env",
        "./tiny_env.ts",
        "--groups",
        "1",
        "--out",
        "a.jsonl",
        "--config",
        "cfg.yaml",
        // Model names this package does not know need their tokenizer named.
        "--tokenizer",
        "qwen3",
      ],
      dir,
      env,
    );
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(sizes(join(dir, "a.jsonl"))).toEqual([4]);
    // One openai: server is merged over the declared one: its base_url stays.
    expect(fromFile.stdout).toContain(`openai server at ${sim.url}/v1 (model file-model)`);
    const fromFlags = await cli(
      [
        "process",
        "--env",
        "./tiny_env.ts",
        "--groups",
        "1",
        "--out",
        "b.jsonl",
        "--env.group_size",
        "2",
        "--model",
        "flag-model",
        "--tokenizer",
        "qwen3",
      ],
      dir,
      env,
    );
    expect(fromFlags.code, fromFlags.stderr).toBe(0);
    expect(sizes(join(dir, "b.jsonl"))).toEqual([2]);
    expect(fromFlags.stdout).toContain(`openai server at ${sim.url}/v1 (model flag-model)`);
  }, 90_000);
});

describe("withInitServers (the layering itself)", () => {
  const def = {
    configInit: () => ({
      servers: [
        { base_url: "http://a:1/v1", model_name: "m-a", tokenizer_name: "none" },
        { base_url: "http://b:1/v1", model_name: "m-b" },
      ],
    }),
  } as unknown as EnvDefinition;
  const flags: InferenceFlags = {
    serverType: "openai",
    model: "sim-policy",
    tokenizer: "qwen3",
    simLatencyMs: 0,
    simSeed: 0,
  };

  it("fills only what the user left unset from the first server; tokenizer 'none' means unset", () => {
    const out = withInitServers(def, flags, (key) => key === "model");
    expect(out).toMatchObject({
      inferenceUrl: "http://a:1/v1",
      model: "sim-policy",
      tokenizer: "qwen3",
    });
    expect(out.servers).toHaveLength(2);
  });

  it("a list of servers from the user replaces the declared ones", () => {
    const mine = [{ base_url: "http://x:1/v1" }, { base_url: "http://y:1/v1" }];
    expect(withInitServers(def, { ...flags, servers: mine }, () => false)).toEqual({
      ...flags,
      servers: mine,
    });
  });
});
