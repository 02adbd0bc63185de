/** `start --workers` prints an EnvFeeder's back-off reason once per report (every 10 s). */
import { describe, expect, it } from "vitest";
import { newBackoffReport, type WorkerEnvRun } from "../../../src/cli/start";
import type { FeederSummary } from "../../../src/worker/env-feeder";

const MESSAGE =
  "all scores identical (0) in the last 200 groups: your reward gives every answer the same score; backing off to 1 item/s until a group is kept";

function withBackoff(backing_off: FeederSummary["backing_off"]): FeederSummary {
  return {
    run: "r",
    name: "r/my_env/0",
    env: "my_env",
    env_id: 0,
    status: "running",
    in_flight: 1,
    issued: 201,
    succeeded: 201,
    failed: 0,
    dropped: 0,
    rejected: 200,
    drop_reasons: { "all scores identical (N)": 200 },
    last_error: null,
    eval_running: false,
    evaluations: 0,
    backing_off,
  };
}

describe("newBackoffReport", () => {
  it("returns each new report once, naming the env", () => {
    const env: WorkerEnvRun = { name: "my_env", url: "u", summary: null, pollError: null };
    expect(newBackoffReport(env)).toBeNull();
    env.summary = withBackoff(null);
    expect(newBackoffReport(env)).toBeNull();
    env.summary = withBackoff({ message: MESSAGE, reported_at: 1_000 });
    expect(newBackoffReport(env)).toBe(`my_env: ${MESSAGE}`);
    expect(newBackoffReport(env)).toBeNull(); // polled again within the 10 s
    env.summary = withBackoff({ message: MESSAGE, reported_at: 11_000 });
    expect(newBackoffReport(env)).toBe(`my_env: ${MESSAGE}`);
  });
});
