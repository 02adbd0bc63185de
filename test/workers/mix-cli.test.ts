/**
 * `atropos-edge mix` against the real API (workerd, local D1): the command function with a fetch
 * that enters the Worker app, as the CLI's HTTP requests would.
 */
import { describe, expect, it } from "vitest";
import { runGuard } from "../../src/cli/guard-command";
import { runMix } from "../../src/cli/mix-command";
import { runReplay } from "../../src/cli/replay-command";
import { call, callWith, json, post, setupRun, uniqueRun } from "./helpers";

const ADMIN = "admin-secret-for-mix-tests";

const fetchApp: typeof fetch = async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  return callWith({ API_TOKEN: ADMIN }, `${url.pathname}${url.search}`, init);
};
const connection = { api: "http://api.test/", token: ADMIN, fetch: fetchApp };

describe("atropos-edge mix", () => {
  it("sets weight and allocation, pauses and resumes an env", async () => {
    const run = uniqueRun("cli-mix");
    const { base, envIds } = await setupRun(run, 8, [2]);
    const envId = String(envIds[0]);
    expect(await runMix(connection, envId, { run, weight: "2", minBatchAllocation: "0.5" })).toBe(
      "env 0 (env0_0): weight 2, min_batch_allocation 0.5, running",
    );
    expect(await runMix(connection, envId, { run, pause: true })).toContain("paused");
    const status = await json<{ env_weight: number }>(call(`${base}/status-env?env_id=0`));
    expect(status.env_weight).toBe(0);
    expect(await runMix(connection, envId, { run, resume: true, minBatchAllocation: "none" })).toBe(
      "env 0 (env0_0): weight 2, min_batch_allocation none, running",
    );
  });

  it("says what to fix before sending anything", async () => {
    const run = uniqueRun("cli-mix-bad");
    await expect(runMix(connection, "0", { run })).rejects.toThrow(
      "at least one of weight, min_batch_allocation, paused",
    );
    await expect(runMix(connection, "x", { run, pause: true })).rejects.toThrow("ENV_ID");
    await expect(runMix(connection, "0", { run, weight: "heavy" })).rejects.toThrow(
      "--weight must be a number",
    );
    await expect(runMix(connection, "0", { run, pause: true, resume: true })).rejects.toThrow(
      "not both",
    );
    await expect(runMix(connection, "7", { run, pause: true })).rejects.toThrow("HTTP 404");
  });
});

describe("atropos-edge replay", () => {
  it("shows the buffer and changes its settings", async () => {
    const run = uniqueRun("cli-replay");
    await setupRun(run, 8, [2]);
    expect(await runReplay(connection, { run })).toBe(
      [
        "replay off: threshold 0.7, capacity 1024, max_replays 1, fraction 0.3",
        "buffer: 0 group(s), 0 replay(s) left; 0 sequence(s) replayed so far",
      ].join("\n"),
    );
    const on = await runReplay(connection, {
      run,
      enable: true,
      fraction: "0.25",
      maxReplays: "2",
    });
    expect(on).toContain("replay on: threshold 0.7, capacity 1024, max_replays 2, fraction 0.25");
    await expect(runReplay(connection, { run, fraction: "2" })).rejects.toThrow(
      "fraction must be at most 0.9",
    );
    await expect(runReplay(connection, { run, enable: true, disable: true })).rejects.toThrow(
      "not both",
    );
  });
});

describe("atropos-edge guard", () => {
  it("configures the guard and shows baselines and events", async () => {
    const run = uniqueRun("cli-guard");
    const { envIds } = await setupRun(run, 8, [2]);
    const set = await runGuard(connection, {
      run,
      action: "raise_replay",
      fraction: "0.5",
      factor: "0.9",
    });
    expect(set).toContain(
      'guard on: factor 0.9, action raise_replay {"type":"raise_replay","fraction":0.5}, webhook none',
    );
    const evals = `/v1/runs/${run}/envs/${envIds[0]}/evals`;
    await post(evals, { step: 1, metrics: { acc: 1 } });
    await post(evals, { step: 2, metrics: { acc: 0.5 } });
    const shown = await runGuard(connection, { run });
    expect(shown).toContain("baseline env 0 acc = 1 (first)");
    expect(shown).toContain("regression: env 0 acc = 0.5 at step 2 fell below 0.9");
    await expect(runGuard(connection, { run, action: "reboot" })).rejects.toThrow(
      "--action must be",
    );
    await expect(runGuard(connection, { run, action: "raise_replay" })).rejects.toThrow();
  });
});
