/**
 * `atropos-edge start` on tool_use with the Llama 3.2 and Mistral Nemo tokenizers: the whole loop
 * (dev server, rollout API, simulator writing each family's own tool calls, demo trainer) learns
 * the tool task as it does on Qwen: accuracy over the last quarter of steps ≥ 0.2 above the first
 * (rollout-weighted, from --summary-json).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { LearningSummary } from "../../src/cli/learning-summary";
import { freePort, runCli } from "./harness";

const dir = mkdtempSync(join(tmpdir(), "tool-families-start-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const STEPS = 20;

/** Rollout-weighted accuracy of some steps (steps that trained nothing new count for nothing). */
function accuracyOf(steps: LearningSummary["envs"][string]["steps"]): number {
  let rollouts = 0;
  let correct = 0;
  for (const step of steps) {
    if (!step.rollouts || step.accuracy === null) continue;
    rollouts += step.rollouts;
    correct += step.accuracy * step.rollouts;
  }
  return correct / rollouts;
}

describe("start on tool_use learns in each family's tool-call format", () => {
  for (const tokenizer of ["llama3_2", "mistral_nemo"]) {
    it(`${tokenizer}: last quarter of ${STEPS} steps ≥ 0.2 above the first`, async () => {
      const summaryFile = join(dir, `${tokenizer}.json`);
      const { code, output } = await runCli(
        [
          "start",
          "--env",
          "tool_use",
          "--tokenizer",
          tokenizer,
          "--steps",
          String(STEPS),
          "--port",
          String(await freePort()),
          "--summary-json",
          summaryFile,
          "--max-seconds",
          "200",
        ],
        { boundMs: 240_000 },
      );
      expect(code, output).toBe(0);
      expect(output).toMatch(new RegExp(`steps trained\\s+${STEPS}/${STEPS}`));
      const steps = (JSON.parse(readFileSync(summaryFile, "utf8")) as LearningSummary).envs
        .tool_use!.steps;
      const quarter = STEPS / 4;
      const first = accuracyOf(steps.slice(0, quarter));
      const last = accuracyOf(steps.slice(-quarter));
      expect(last, JSON.stringify(steps)).toBeGreaterThanOrEqual(first + 0.2);
    }, 260_000);
  }
});
