/**
 * ATROPOS_EDGE_<NAME> env vars are commander's: each option declares its env var (help shows it),
 * commander parses the value, and the layers keep flag > env var > config file > default.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { afterEach, describe, expect, it } from "vitest";
import { opt, type Resolved, withOptions } from "../../../src/cli/commands/options";
import type { OptionDefaults } from "../../../src/cli/config";
import { buildProgram } from "../../../src/cli/main";
import { connectionFrom, withConnectionOptions } from "../../../src/cli/run-control";

const VARS = [
  "ATROPOS_EDGE_STEPS",
  "ATROPOS_EDGE_KEEP",
  "ATROPOS_EDGE_NAME",
  "ATROPOS_EDGE_CONFIG",
  "ATROPOS_EDGE_MODEL",
  "ATROPOS_EDGE_TOKEN",
  "API_TOKEN",
];
const saved = Object.fromEntries(VARS.map((v) => [v, process.env[v]]));
afterEach(() => {
  for (const v of VARS) {
    if (saved[v] === undefined) delete process.env[v];
    else process.env[v] = saved[v];
  }
});
for (const v of VARS) delete process.env[v];

function setEnv(vars: Record<string, string>): void {
  for (const [k, v] of Object.entries(vars)) process.env[k] = v;
}

const SPECS = [
  opt("--steps <n>", "steps", "steps", 20),
  opt("--keep", "keep", "keep it", false),
  opt("--name <s>", "name", "a name", "plain"),
  opt("--model <name>", "model", "model name", "sim-policy"),
];

/** Parses `args` for a command named `name` built by withOptions; resolves what the action got. */
async function resolve(
  args: string[],
  name = "demo",
  dotted = { env: {}, openai: {} },
): Promise<Resolved<OptionDefaults>> {
  let got: Resolved<OptionDefaults> | undefined;
  const cmd = new Command(name).exitOverride().configureOutput({ writeErr: () => {} });
  withOptions(
    cmd,
    SPECS,
    async (o) => {
      got = o;
      return 0;
    },
    dotted,
  );
  await cmd.parseAsync(["node", name, ...args]);
  if (!got) throw new Error("action did not run");
  return got;
}

function configFile(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "cli-env-vars-")), "c.yaml");
  writeFileSync(path, text);
  return path;
}

describe("ATROPOS_EDGE_<NAME> env vars through commander", () => {
  it("keeps flag > env var > config file (command section, then top level) > default", async () => {
    expect((await resolve([])).steps).toBe(20);
    const top = configFile("steps: 4\n");
    expect((await resolve(["--config", top])).steps).toBe(4);
    const file = configFile("steps: 4\ndemo:\n  steps: 5\n");
    expect((await resolve(["--config", file])).steps).toBe(5);
    setEnv({ ATROPOS_EDGE_STEPS: "6" });
    const fromEnv = await resolve(["--config", file]);
    expect(fromEnv.steps).toBe(6);
    expect(typeof fromEnv.steps).toBe("number");
    expect((await resolve(["--config", file, "--steps", "7"])).steps).toBe(7);
    // A string option the same way.
    setEnv({ ATROPOS_EDGE_NAME: "from-env" });
    expect((await resolve(["--config", configFile("name: from-file\n")])).name).toBe("from-env");
    expect((await resolve(["--name", "from-flag"])).name).toBe("from-flag");
  });

  it("reads the --config file from ATROPOS_EDGE_CONFIG; --config beats it", async () => {
    setEnv({ ATROPOS_EDGE_CONFIG: configFile("steps: 8\n") });
    expect((await resolve([])).steps).toBe(8);
    expect((await resolve(["--config", configFile("steps: 9\n")])).steps).toBe(9);
  });

  it("a boolean env var means what it spells, not whether it is set", async () => {
    const keepInFile = configFile("keep: true\n");
    expect((await resolve(["--config", keepInFile])).keep).toBe(true);
    for (const off of ["false", "0", "no", "off", ""]) {
      setEnv({ ATROPOS_EDGE_KEEP: off });
      expect((await resolve(["--config", keepInFile])).keep, off).toBe(false);
    }
    setEnv({ ATROPOS_EDGE_KEEP: "false" });
    expect((await resolve(["--keep"])).keep).toBe(true);
    for (const on of ["true", "1", "yes", "ON"]) {
      setEnv({ ATROPOS_EDGE_KEEP: on });
      expect((await resolve([])).keep, on).toBe(true);
    }
    setEnv({ ATROPOS_EDGE_KEEP: "maybe" });
    await expect(resolve([])).rejects.toThrow(
      /^error: option '--keep' value 'maybe' from env 'ATROPOS_EDGE_KEEP' is invalid\. 'keep' must be true or false/,
    );
  });

  it("a bad number names the env var or the flag it came from and what it must be", async () => {
    setEnv({ ATROPOS_EDGE_STEPS: "many" });
    await expect(resolve([])).rejects.toThrow(
      "error: option '--steps <n>' value 'many' from env 'ATROPOS_EDGE_STEPS' is invalid. 'steps' must be a number.",
    );
    await expect(resolve(["--steps", "x"])).rejects.toThrow(
      "error: option '--steps <n>' argument 'x' is invalid. 'steps' must be a number.",
    );
    // The flag is parsed first; the env var is not read when the flag is given.
    expect((await resolve(["--steps", "3"])).steps).toBe(3);
  });

  it("an Atropos --openai.* flag still beats the env var", async () => {
    setEnv({ ATROPOS_EDGE_MODEL: "env-model" });
    expect((await resolve([], "serve")).model).toBe("env-model");
    const dotted = { env: {}, openai: { model_name: "flag-model" } };
    expect((await resolve([], "serve", dotted)).model).toBe("flag-model");
  });

  it("help lists each option's env var", () => {
    const program = buildProgram();
    const help = (path: string[]) => {
      let cmd = program;
      for (const name of path) {
        const sub = cmd.commands.find((c) => c.name() === name);
        if (!sub) throw new Error(`no command ${name}`);
        cmd = sub;
      }
      return cmd.helpInformation().replace(/\s+/g, " ");
    };
    const start = help(["start"]);
    expect(start).toContain(
      "trainer batch size in sequences (default: 32, env: ATROPOS_EDGE_BATCH_SIZE)",
    );
    expect(start).toContain("(env: ATROPOS_EDGE_FORCE_TOKENIZER)");
    expect(start).toContain("YAML or JSON file with options (env: ATROPOS_EDGE_CONFIG)");
    for (const path of [
      ["tokens", "list"],
      ["inference", "show"],
      ["mix"],
      ["replay"],
      ["guard"],
      ["import"],
    ]) {
      expect(help(path), path.join(" ")).toMatch(
        /--token <t> .*token; without it or the env var, \$API_TOKEN \(env: ATROPOS_EDGE_TOKEN\)/,
      );
    }
    // Every option withOptions adds carries its env var.
    for (const name of ["start", "process", "serve", "evaluate", "sim", "train"]) {
      const cmd = program.commands.find((c) => c.name() === name);
      for (const o of cmd?.options ?? []) {
        if (o.long === "--config") continue;
        const words = o.attributeName().replace(/([a-z0-9])([A-Z])/g, "$1_$2");
        expect(o.envVar, `${name} ${o.long}`).toBe(`ATROPOS_EDGE_${words.toUpperCase()}`);
      }
    }
  });
});

describe("--token", () => {
  const tokenOf = (args: string[]) => {
    const cmd = withConnectionOptions(new Command("t"), "admin").exitOverride();
    cmd.parse(["node", "t", ...args]);
    return connectionFrom({ ...cmd.opts(), api: "http://127.0.0.1:1" }).token;
  };

  it("is the flag, else ATROPOS_EDGE_TOKEN, else API_TOKEN", () => {
    expect(tokenOf([])).toBeUndefined();
    setEnv({ API_TOKEN: "worker-token" });
    expect(tokenOf([])).toBe("worker-token");
    setEnv({ ATROPOS_EDGE_TOKEN: "edge-token" });
    expect(tokenOf([])).toBe("edge-token");
    expect(tokenOf(["--token", "flag-token"])).toBe("flag-token");
  });
});
