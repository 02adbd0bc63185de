import { describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../../src/cli/dev-process";
import { errorLocation, FailureAccount, parseFailureRate } from "../../../src/cli/failure-account";

function errorWithStack(frames: string[]): Error {
  const error = new Error("boom");
  error.stack = ["Error: boom", ...frames.map((f) => `    at ${f}`)].join("\n");
  return error;
}

describe("errorLocation", () => {
  it("names the first frame outside the runtime, relative to the working directory", () => {
    const error = errorWithStack([
      "NumberGuess.collectTrajectories (/home/me/proj/src/envs/number-guess.ts:42:11)",
      `rolloutItem (${PROJECT_ROOT}/src/env-sdk/runtime/rollout-core.ts:200:5)`,
      "process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
    ]);
    expect(errorLocation(error, "/home/me/proj")).toBe("src/envs/number-guess.ts:42");
    expect(errorLocation(error, "/elsewhere")).toBe("/home/me/proj/src/envs/number-guess.ts:42");
  });

  it("skips the package's runtime, dependencies and node internals", () => {
    const error = errorWithStack([
      `sampleChat (${PROJECT_ROOT}/src/inference/sample.ts:10:3)`,
      "fetch (/home/me/proj/node_modules/undici/index.js:1:1)",
      "process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
      "file:///home/me/proj/src/envs/mine.ts:7:9",
    ]);
    expect(errorLocation(error, "/home/me/proj")).toBe("src/envs/mine.ts:7");
    const internal = errorWithStack([
      "process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
    ]);
    expect(errorLocation(internal)).toBeNull();
    expect(errorLocation("not an error")).toBeNull();
  });

  it("locates a real throw in this file", () => {
    const location = errorLocation(new Error("here"), PROJECT_ROOT);
    expect(location).toMatch(/^test\/unit\/cli\/failure-account\.test\.ts:\d+$/);
  });
});

describe("FailureAccount", () => {
  const policy = { maxFailureRate: 0.1, allowFailures: false };

  it("fails a run above the share, naming the most frequent error and its place", () => {
    const account = new FailureAccount();
    for (let i = 0; i < 41; i++) account.ran("guess");
    const error = errorWithStack(["Guess.step (/p/src/envs/guess.ts:12:5)"]);
    for (let i = 0; i < 9; i++) account.failed("guess", "boom", error);
    account.failed("guess", "other", undefined);
    expect(account.counts("guess")).toEqual({ items: 51, failed: 10 });
    const verdict = account.verdict(policy);
    expect(verdict).toMatch(
      /^guess: 10 of 51 items failed \(19\.6%\), boom \(at \/p\/src\/envs\/guess\.ts:12\), 9×; 1 other error/,
    );
    expect(verdict).toContain("only the items that succeeded");
    expect(verdict).toContain("--allow-failures");
    expect(account.verdict({ ...policy, allowFailures: true })).toBeNull();
    expect(account.verdict({ ...policy, maxFailureRate: 0.2 })).toBeNull();
  });

  it("passes a run at or under the share, and one without failures", () => {
    const account = new FailureAccount();
    for (let i = 0; i < 9; i++) account.ran("a");
    account.failed("a", "x");
    expect(account.verdict(policy)).toBeNull(); // exactly 10 %
    account.ran("b");
    expect(account.verdict(policy)).toBeNull();
  });

  it("takes a Worker env's counts as its feeder reports them", () => {
    const account = new FailureAccount();
    account.setFeederCounts("w", null); // no status yet: nothing counted
    expect(account.counts("w")).toEqual({ items: 0, failed: 0 });
    account.setFeederCounts("w", { succeeded: 5, failed: 5, last_error: "Error: nope" });
    expect(account.verdict(policy)).toMatch(/^w: 5 of 10 items failed \(50\.0%\), Error: nope, 5×/);
  });

  it("--max-failure-rate is a share between 0 and 1", () => {
    expect(parseFailureRate("0.25")).toBe(0.25);
    expect(() => parseFailureRate("10")).toThrow(/between 0 and 1/);
    expect(() => parseFailureRate("lots")).toThrow(/--max-failure-rate/);
  });
});
