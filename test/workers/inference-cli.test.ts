/**
 * `atropos-edge inference set|show` against the real API (workerd, local D1): the command
 * functions with a fetch that enters the Worker app, as the CLI's HTTP requests would.
 */
import { describe, expect, it } from "vitest";
import { runInferenceSet, runInferenceShow } from "../../src/cli/inference-servers-command";
import { callWith, uniqueRun } from "./helpers";

const ADMIN = "admin-secret-for-inference-cli-tests";
const KEY = "sk-from-the-environment";

function api(token: string | undefined) {
  const fetchApp: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    return callWith({ API_TOKEN: ADMIN }, `${url.pathname}${url.search}`, init);
  };
  return { api: "http://api.test/", token, fetch: fetchApp };
}

describe("atropos-edge inference", () => {
  it("sets a server with its key from the environment and shows it without the key", async () => {
    const run = uniqueRun("cli-inf");
    const set = await runInferenceSet(api(ADMIN), {
      run,
      baseUrl: "http://gpu-1:8000/v1",
      serverType: "vllm",
      model: "Qwen/Qwen3-1.7B",
      apiKeyEnv: "VLLM_KEY",
      env: { VLLM_KEY: KEY },
    });
    expect(set).toBe(
      `run ${run}: 1 inference server\n  vllm  http://gpu-1:8000/v1  model Qwen/Qwen3-1.7B  api key set`,
    );
    const shown = await runInferenceShow(api(ADMIN), run, true);
    expect(shown).not.toContain(KEY);
    expect(JSON.parse(shown)).toMatchObject({
      run,
      servers: [{ base_url: "http://gpu-1:8000/v1", api_key: null, has_api_key: true }],
    });
  });

  it("says what to fix: a missing key variable, a bad server type, a non-admin token", async () => {
    const run = uniqueRun("cli-inf");
    await expect(
      runInferenceSet(api(ADMIN), { run, baseUrl: "http://x/v1", apiKeyEnv: "NOPE", env: {} }),
    ).rejects.toThrow("--api-key-env NOPE: that variable is not set");
    await expect(
      runInferenceSet(api(ADMIN), { run, baseUrl: "http://x/v1", serverType: "tgi" }),
    ).rejects.toThrow('unknown server type "tgi"');
    await expect(runInferenceSet(api(undefined), { run, baseUrl: "http://x/v1" })).rejects.toThrow(
      "HTTP 401",
    );
    expect(await runInferenceShow(api(ADMIN), run)).toBe(`run ${run}: no inference servers`);
  });
});
