/**
 * LearningRecorder: the per-step learning curve `start --summary-json` writes. Groups dropped for
 * identical scores count toward their step's accuracy and rollouts (a converged policy's
 * all-correct groups are dropped, and the curve must not hide them).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  LearningRecorder,
  riseLines,
  writeLearningSummary,
} from "../../../src/cli/learning-summary";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("LearningRecorder", () => {
  it("counts dropped groups' rollouts in their step and writes the issue's JSON shape", () => {
    let step = 1;
    const recorder = new LearningRecorder(() => step);
    // Step 1: a mixed group (kept) and an all-correct group, dropped for identical scores.
    // As start wires it, the env reports every group it produced, then the runtime the drop.
    recorder.groups("gsm8k_lite", [[1, -1, 1, -1]]);
    recorder.groups("gsm8k_lite", [[1, 1, 1, 1]]);
    recorder.dropped("gsm8k_lite");
    recorder.groups("letter_counting", [[0.5, 0]]);
    recorder.stepStaleness(1, [0, 0]);
    // Step 2: two groups in one call (an env returning a list), and an all-wrong dropped group.
    step = 2;
    recorder.groups("gsm8k_lite", [
      [1, 1, -1, 1],
      [-1, -1, -1, -1],
    ]);
    recorder.dropped("gsm8k_lite");
    recorder.stepStaleness(2, [1, 3]);
    recorder.stepStaleness(3, []); // nothing leased: no record
    recorder.pushes = 2;

    const dir = mkdtempSync(join(tmpdir(), "learning-summary-"));
    dirs.push(dir);
    const file = join(dir, "summary.json");
    writeLearningSummary(
      file,
      recorder.summary(["gsm8k_lite", "letter_counting"], 3, { announced: 2, simulator: 2 }, 0.5),
    );
    const written: unknown = JSON.parse(readFileSync(file, "utf8"));
    expect(written).toStrictEqual({
      envs: {
        gsm8k_lite: {
          steps: [
            // 6 of 8 rollouts scored above 0, the dropped all-correct group's 4 included.
            { step: 1, accuracy: 0.75, mean_score: 0.5, rollouts: 8, dropped_groups: 1 },
            { step: 2, accuracy: 3 / 8, mean_score: -0.25, rollouts: 8, dropped_groups: 1 },
            // A trained step the env produced nothing for: no accuracy rather than 0.
            { step: 3, accuracy: null, mean_score: null, rollouts: 0, dropped_groups: 0 },
          ],
          // 3 steps: the first and the last one compared.
          rise: {
            first: { from_step: 1, to_step: 1, rollouts: 8, accuracy: 0.75, mean_score: 0.5 },
            last: { from_step: 3, to_step: 3, rollouts: 0, accuracy: null, mean_score: null },
          },
        },
        letter_counting: {
          steps: [
            { step: 1, accuracy: 0.5, mean_score: 0.25, rollouts: 2, dropped_groups: 0 },
            { step: 2, accuracy: null, mean_score: null, rollouts: 0, dropped_groups: 0 },
            { step: 3, accuracy: null, mean_score: null, rollouts: 0, dropped_groups: 0 },
          ],
          rise: {
            first: { from_step: 1, to_step: 1, rollouts: 2, accuracy: 0.5, mean_score: 0.25 },
            last: { from_step: 3, to_step: 3, rollouts: 0, accuracy: null, mean_score: null },
          },
        },
      },
      policy_versions: { announced: 2, simulator: 2, pushes: 2 },
      staleness: {
        mean: 1,
        max: 3,
        per_step: [
          { step: 1, mean: 0, max: 0 },
          { step: 2, mean: 2, max: 3 },
        ],
      },
      learning_rate: 0.5,
    });
  });

  it("an env that never produced a group still gets one entry per trained step", () => {
    const summary = new LearningRecorder(() => 1).summary(
      ["quiet"],
      2,
      { announced: 0, simulator: null },
      0,
    );
    expect(summary.envs.quiet!.steps.map((s) => s.rollouts)).toEqual([0, 0]);
    expect(summary.staleness).toEqual({ mean: null, max: null, per_step: [] });
  });

  it("the rise pools the first and the last 10 steps, and the summary prints it per env", () => {
    let step = 1;
    const recorder = new LearningRecorder(() => step);
    // 30 steps: accuracy 0.25 over steps 1–10, 0.75 over steps 21–30.
    for (step = 1; step <= 30; step++) {
      const correct = step <= 10 ? 1 : step > 20 ? 3 : 2;
      recorder.groups("guess", [[...Array(correct).fill(1), ...Array(4 - correct).fill(0)]]);
    }
    const summary = recorder.summary(["guess", "idle"], 30, { announced: 30, simulator: 30 }, 0.3);
    expect(summary.envs.guess!.rise).toEqual({
      first: { from_step: 1, to_step: 10, rollouts: 40, accuracy: 0.25, mean_score: 0.25 },
      last: { from_step: 21, to_step: 30, rollouts: 40, accuracy: 0.75, mean_score: 0.75 },
    });
    expect(riseLines(summary)).toEqual([
      "rise per env      mean score / accuracy, first steps → last steps:",
      "  guess            0.250 / 25% (steps 1–10) → 0.750 / 75% (steps 21–30)",
      "  idle             – / – (steps 1–10) → – / – (steps 21–30)",
    ]);
  });
});
