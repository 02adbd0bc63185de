import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  atroposOptions,
  envConfigsFor,
  extractDottedFlags,
  parseFlagValue,
  splitAtroposFile,
  withDottedFlags,
} from "../../../src/cli/atropos-config";
import { ATROPOS_FIELDS, withGeneratedTable } from "../../../src/cli/atropos-fields";
import { resolveOptions } from "../../../src/cli/config";
import { APIServerConfigSchema } from "../../../src/core/wire/server-config";
import { BaseEnvConfigSchema } from "../../../src/env-sdk/config";
import { getEnvDefinition } from "../../../src/envs/index";

const ROOT = resolve(import.meta.dirname, "../../..");

describe("--env.* / --openai.* flags", () => {
  it("are taken out of argv; values are JSON when they parse, None is null", () => {
    const { argv, dotted } = extractDottedFlags([
      "node",
      "main",
      "serve",
      "--env",
      "gsm8k_lite",
      "--env.group_size",
      "8",
      "--env.wandb_name=my-run",
      "--env.include_messages",
      "--openai.base_url",
      "http://h:1/v1",
      "--env.min_batch_allocation",
      "None",
      "--model",
      "m",
    ]);
    expect(argv).toEqual(["node", "main", "serve", "--env", "gsm8k_lite", "--model", "m"]);
    expect(dotted).toEqual({
      env: {
        group_size: 8,
        wandb_name: "my-run",
        include_messages: true,
        min_batch_allocation: null,
      },
      openai: { base_url: "http://h:1/v1" },
    });
    expect(parseFlagValue("[1,2]")).toEqual([1, 2]);
    expect(parseFlagValue("false")).toBe(false);
    expect(parseFlagValue("qwen3")).toBe("qwen3");
  });

  it("refuse --openai.* against a list of servers (as Atropos does)", () => {
    const { atropos } = splitAtroposFile(
      { openai: [{ base_url: "http://a/v1" }, { base_url: "http://b/v1" }] },
      "f.yaml",
    );
    expect(() => withDottedFlags(atropos, { env: {}, openai: { model_name: "x" } })).toThrow(
      "--openai.model_name: f.yaml lists 2 servers",
    );
  });
});

describe("config file layouts", () => {
  it("leaves atropos-edge's flat layout alone, even with a string `env`", () => {
    const file = { env: "gsm8k_lite", groups: 3, process: { out: "x.jsonl" } };
    const { rest, atropos } = splitAtroposFile(file, "f.yaml");
    expect(rest).toEqual(file);
    expect(atropos.env.size).toBe(0);
  });

  it("maps Atropos fields onto options: flag > env var > file > default", () => {
    const file = {
      env: { group_size: 3, tokenizer_name: "llama3", rollout_server_url: "http://api:1" },
      openai: { base_url: "http://inf/v1", model_name: "file-model", api_key: "k" },
      serve: { run: "r1" },
    };
    const { rest, atropos: fromFile } = splitAtroposFile(file, "f.yaml");
    const dotted = { env: {}, openai: { model_name: "flag-model" } };
    const atropos = withDottedFlags(fromFile, dotted);
    const scope = {
      command: "serve",
      optionKeys: ["inferenceUrl", "model", "apiKey", "tokenizer", "api", "run"],
    };
    const mapped = atroposOptions(atropos, scope, dotted);
    const resolved = resolveOptions(
      {
        inferenceUrl: undefined,
        model: "sim-policy",
        apiKey: undefined,
        tokenizer: "qwen3",
        api: "d",
        run: "default",
      },
      {
        flags: mapped.flags,
        env: { apiKey: "from-env" },
        file: { ...rest, ...mapped.file },
        command: "serve",
      },
    );
    expect(resolved).toEqual({
      inferenceUrl: "http://inf/v1",
      model: "flag-model",
      apiKey: "from-env",
      tokenizer: "llama3",
      api: "http://api:1",
      run: "r1",
    });
    // Fields that set an option do not reach the env; the rest do.
    const [config] = envConfigsFor([getEnvDefinition("gsm8k_lite")], atropos, scope, []);
    expect(config).toEqual({ group_size: 3 });
  });

  it("an option-setting field of another command is neither passed on nor an error", () => {
    const { atropos } = splitAtroposFile({ env: { data_dir_to_save_evals: "evals" } }, "f.yaml");
    const warnings: string[] = [];
    const scope = { command: "serve", optionKeys: ["api"] };
    expect(envConfigsFor([getEnvDefinition("gsm8k_lite")], atropos, scope, warnings)).toEqual([{}]);
    expect(warnings).toEqual([]);
  });
});

describe("docs/CONFIG.md", () => {
  it("holds the table generated from src/cli/atropos-fields.ts (npx tsx scripts/gen-config-table.ts)", () => {
    const doc = readFileSync(join(ROOT, "docs", "CONFIG.md"), "utf8");
    expect(doc).toBe(withGeneratedTable(doc));
  });
});

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

describe("every config field is read or declared ignored", () => {
  const code = sources(join(ROOT, "src"))
    .filter((p) => !p.endsWith(join("env-sdk", "config.ts")))
    .map((p) => readFileSync(p, "utf8"))
    .join("\n");

  it("each BaseEnvConfig field is read somewhere in src/", () => {
    const unread = Object.keys(BaseEnvConfigSchema.shape).filter(
      (field) => !new RegExp(`\\.${field}\\b`).test(code),
    );
    expect(unread).toEqual([]);
  });

  it("the Atropos table agrees with the schemas", () => {
    const envFields = Object.keys(BaseEnvConfigSchema.shape);
    const serverFields = Object.keys(APIServerConfigSchema.shape);
    for (const f of ATROPOS_FIELDS) {
      const schema = f.section === "env" ? envFields : f.section === "openai" ? serverFields : [];
      if (f.status === "ignored") {
        // Declared ignored → not in our env schema (the server schema may keep it for parsing).
        if (f.section === "env") expect(envFields, f.name).not.toContain(f.name);
      } else {
        // Used → something takes it: a CLI option, or the schema it is passed on to.
        expect(Boolean(f.option) || schema.includes(f.name), f.name).toBe(true);
      }
    }
  });
});
