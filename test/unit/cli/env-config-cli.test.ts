/**
 * The real CLI (bin/atropos-edge.mjs) in a temp dir: a user env module given by path, Atropos
 * config files and --env.* / --openai.* flags. `process` starts the simulator in-process.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { noSimulateWarning } from "../../../src/cli/simulated-env";
import { genericCandidates } from "../../../src/sim/generic-mix";

const ROOT = resolve(import.meta.dirname, "../../..");
const BIN = join(ROOT, "bin", "atropos-edge.mjs");
const src = (path: string) => JSON.stringify(join(ROOT, "src", path));

const TINY_ENV = `
import { BaseEnv, BaseEnvConfigSchema, defineEnv } from ${src("sdk/env.ts")};

class TinyEnv extends BaseEnv<number> {
  static override envName = "tiny_env";
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

function workdir(): string {
  const dir = mkdtempSync(join(tmpdir(), "cli-env-config-"));
  writeFileSync(join(dir, "tiny_env.ts"), TINY_ENV);
  return dir;
}

/** The same env without `simulate`: the simulator cannot know its answers. */
const TINY_ENV_WITHOUT_SIMULATE = TINY_ENV.replace(/, \{\n {2}simulate:[\s\S]*?\n\}\);/, ");");

const groupsIn = (file: string) =>
  readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map(
      (l) =>
        JSON.parse(l) as {
          tokens: number[][];
          scores: number[];
          messages?: { role: string; content: string }[][];
        },
    );

describe("--env ./path.ts", () => {
  it("process runs an env module from the current directory; --env.* sets its config", async () => {
    const dir = workdir();
    const r = await cli(
      [
        "process",
        "--env",
        "./tiny_env.ts",
        "--groups",
        "2",
        "--out",
        "out.jsonl",
        "--env.group_size",
        "3",
      ],
      dir,
    );
    expect(r.stderr).not.toMatch(/warning|error/);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("wrote 2/2 groups to out.jsonl");
    const groups = groupsIn(join(dir, "out.jsonl"));
    expect(groups).toHaveLength(2);
    for (const g of groups) expect(g.tokens).toHaveLength(3);
    expect(readFileSync(join(dir, "out.html"), "utf8")).toContain("tiny_env");
  });

  it("an env without simulate() gets one warning line and the simulator's generic mix", async () => {
    const dir = workdir();
    expect(TINY_ENV_WITHOUT_SIMULATE).not.toContain("simulate");
    writeFileSync(join(dir, "tiny_env.ts"), TINY_ENV_WITHOUT_SIMULATE);
    const r = await cli(
      ["process", "--env", "./tiny_env.ts", "--groups", "3", "--out", "o.jsonl"],
      dir,
    );
    expect(r.code).toBe(0);
    // stderr also carries the progress bar.
    const warnings = r.stderr.split("\n").filter((l) => l.startsWith("warning:"));
    expect(warnings).toEqual([noSimulateWarning("tiny_env")]);
    // The env decodes prompt + answer into one message: some item's prompt followed by one of
    // the generic mix's answers to it.
    const texts = groupsIn(join(dir, "o.jsonl")).flatMap((g) => g.messages ?? []);
    expect(texts.length).toBe(3 * 4);
    const prompts = Array.from({ length: 20 }, (_, i) => `Say a word about ${i}`);
    const isGeneric = (text: string) =>
      prompts.some((p) => genericCandidates(p).some((c) => text === p + c.text));
    for (const [message] of texts) expect(isGeneric(message!.content)).toBe(true);
    // With simulate() (the other tests' env) the answers are the env's own candidates.
    writeFileSync(join(dir, "tiny_env.ts"), TINY_ENV);
    const own = await cli(
      ["process", "--env", "./tiny_env.ts", "--groups", "1", "--out", "s.jsonl"],
      dir,
    );
    expect(own.stderr).not.toContain("warning:");
    const ownTexts = groupsIn(join(dir, "s.jsonl")).flatMap((g) => g.messages ?? []);
    expect(ownTexts.length).toBe(4);
    for (const [message] of ownTexts) {
      expect(isGeneric(message!.content)).toBe(false);
      expect(message!.content).toMatch(/^Say a word about \d+(apple|pear)$/);
    }
  });

  it("a bad module or default export is one error line naming the file, exit 1", async () => {
    const dir = workdir();
    writeFileSync(join(dir, "not_env.ts"), "export default 42;\n");
    writeFileSync(join(dir, "broken.ts"), "export default {{;\n");
    const notEnv = await cli(["process", "--env", "./not_env.ts"], dir);
    expect(notEnv.code).toBe(1);
    expect(notEnv.stderr).toBe(
      "error: ./not_env.ts: default export must be an env made with defineEnv(...) (got number)\n",
    );
    const broken = await cli(["evaluate", "--env", "./broken.ts"], dir);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/^error: \.\/broken\.ts: cannot load the module: .+\n$/);
    const missing = await cli(["serve", "--env", "./nope.ts"], dir);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: \.\/nope\.ts: no such file \(looked at .+\)\n$/);
  });

  it("says what to pass instead of a Worker entry or an unknown env name", async () => {
    const dir = workdir();
    writeFileSync(
      join(dir, "entry.ts"),
      'import { DurableObject } from "cloudflare:workers";\nexport default { DurableObject };\n',
    );
    const entry = await cli(["process", "--env", "./entry.ts"], dir);
    expect(entry.code).toBe(1);
    expect(entry.stderr).toContain("pass the env's own file");
    const unknown = await cli(["process", "--env", "count_vowels"], dir);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown env "count_vowels"');
    expect(unknown.stderr).toContain("--env ./src/envs/count_vowels.ts");
  });

  it("start takes --env like the other commands (a one-item --envs); both at once is an error", async () => {
    const dir = workdir();
    writeFileSync(join(dir, "not_env.ts"), "export default 42;\n");
    // The module is loaded (and refused) before anything starts: --env reached the loader.
    const notEnv = await cli(["start", "--env", "./not_env.ts"], dir);
    expect(notEnv.code).toBe(1);
    expect(notEnv.stderr).toBe(
      "error: ./not_env.ts: default export must be an env made with defineEnv(...) (got number)\n",
    );
    const both = await cli(["start", "--env", "./not_env.ts", "--envs", "gsm8k_lite"], dir);
    expect(both.code).toBe(1);
    expect(both.stderr).toBe("error: give --env (one env) or --envs (a list), not both\n");
  });
});

describe("Atropos config files and flags", () => {
  const ATROPOS_YAML = [
    "env:",
    "  group_size: 3",
    "  use_wandb: true",
    "  wandb_name: tiny",
    "  data_path_to_save_groups: from-file.jsonl",
    "openai:",
    "  - model_name: sim-policy",
    "    server_type: vllm",
    "    timeout: 30",
    "    rolling_buffer_length: 100",
    "  - base_url: http://127.0.0.1:1/v1",
    "    model_name: other",
    "slurm: false",
    "process:",
    "  groups: 2",
    "",
  ].join("\n");

  it("accepts Atropos' layout: ignored fields warn once each, the others apply", async () => {
    const dir = workdir();
    writeFileSync(join(dir, "cfg.yaml"), ATROPOS_YAML);
    const r = await cli(["process", "--env", "./tiny_env.ts", "--config", "cfg.yaml"], dir);
    expect(r.code).toBe(0);
    // stderr also carries the progress bar.
    const warnings = r.stderr.split("\n").filter((l) => l.startsWith("warning:"));
    expect(warnings).toEqual([
      expect.stringMatching(
        /^warning: cfg\.yaml: openai\.rolling_buffer_length is accepted and ignored \(.+\)$/,
      ),
      expect.stringMatching(/^warning: cfg\.yaml: slurm is accepted and ignored \(.+\)$/),
      expect.stringMatching(/^warning: cfg\.yaml: env\.use_wandb is accepted and ignored \(.+\)$/),
    ]);
    // env.data_path_to_save_groups is process' --out; env.group_size reaches the env.
    const groups = groupsIn(join(dir, "from-file.jsonl"));
    expect(groups).toHaveLength(2);
    for (const g of groups) expect(g.tokens).toHaveLength(3);
  });

  it("flag > env var > file", async () => {
    const dir = workdir();
    writeFileSync(join(dir, "cfg.yaml"), ATROPOS_YAML);
    const r = await cli(
      ["process", "--env", "./tiny_env.ts", "--config", "cfg.yaml", "--env.group_size=2"],
      dir,
      { ATROPOS_EDGE_OUT: "from-env-var.jsonl" },
    );
    expect(r.code).toBe(0);
    const groups = groupsIn(join(dir, "from-env-var.jsonl"));
    for (const g of groups) expect(g.tokens).toHaveLength(2);
    const flagged = await cli(
      [
        "process",
        "--env",
        "./tiny_env.ts",
        "--config",
        "cfg.yaml",
        "--env.data_path_to_save_groups",
        "from-flag.jsonl",
      ],
      dir,
      { ATROPOS_EDGE_OUT: "from-env-var-2.jsonl" },
    );
    expect(flagged.code).toBe(0);
    expect(groupsIn(join(dir, "from-flag.jsonl"))).toHaveLength(2);
  });

  it("an unknown field is an error naming it and the file", async () => {
    const dir = workdir();
    writeFileSync(join(dir, "bad.yaml"), "env:\n  group_size: 2\n  gruop_size: 3\n");
    const r = await cli(["process", "--env", "./tiny_env.ts", "--config", "bad.yaml"], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: bad\.yaml: unknown field env\.gruop_size \(.+\)\n$/);
    const flag = await cli(["process", "--env", "gsm8k_lite", "--openai.base_uri", "x"], dir);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toMatch(/^error: command line: unknown field openai\.base_uri/);
  });
});
