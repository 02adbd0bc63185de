import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { envVarName, loadConfigFile, resolveOptions } from "../../../src/cli/config";

const defaults = { steps: 20, envs: "gsm8k_lite", port: 8787, keep: false, url: undefined };

describe("config precedence", () => {
  const dir = mkdtempSync(join(tmpdir(), "cli-config-"));
  const yamlPath = join(dir, "c.yaml");
  writeFileSync(
    yamlPath,
    "steps: 5\nbatch_size: 8\nport: 9000\nstart:\n  port: 9100\n  keep: yes\n",
  );

  // The env layer holds what commander read from ATROPOS_EDGE_<NAME>, by option key
  // (env-vars.test.ts runs it through commander).
  it("flag > env var > command section > file top level > default", () => {
    const file = loadConfigFile(yamlPath);
    const resolved = resolveOptions(defaults, {
      flags: { steps: "7" },
      env: { steps: "6", envs: "letter_counting" },
      file,
      command: "start",
    });
    expect(resolved).toEqual({
      steps: 7,
      envs: "letter_counting",
      port: 9100,
      keep: true,
      url: undefined,
    });
    const noFlags = resolveOptions(defaults, { flags: {}, env: { steps: "6" }, file });
    expect(noFlags.steps).toBe(6);
    expect(noFlags.port).toBe(9000);
    expect(resolveOptions(defaults, { flags: {} })).toEqual(defaults);
  });

  it("reads JSON with kebab-case keys", () => {
    const jsonPath = join(dir, "c.json");
    writeFileSync(jsonPath, JSON.stringify({ "batch-size": 4, url: "http://127.0.0.1:1" }));
    const resolved = resolveOptions(
      { batchSize: 32, url: undefined as string | undefined },
      { flags: {}, file: loadConfigFile(jsonPath) },
    );
    expect(resolved).toEqual({ batchSize: 4, url: "http://127.0.0.1:1" });
  });

  it("names the source of a bad value", () => {
    expect(() => resolveOptions(defaults, { flags: {}, file: { port: "abc" } })).toThrow(
      /^config file: option 'port' must be a number, got "abc"$/,
    );
    expect(() => loadConfigFile(join(dir, "missing.yaml"))).toThrow(/cannot read config file/);
  });

  it("derives env var names from camelCase keys", () => {
    expect(envVarName("batchSize")).toBe("ATROPOS_EDGE_BATCH_SIZE");
    expect(envVarName("simLatencyMs")).toBe("ATROPOS_EDGE_SIM_LATENCY_MS");
  });
});
