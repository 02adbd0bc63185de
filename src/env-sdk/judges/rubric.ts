/**
 * What a judge sees: a trajectory rendered as text (task, steps, final response) inside a
 * five-dimension rubric prompt, or several trajectories of one group in a ranking prompt.
 */
import {
  DEFAULT_RUBRIC_WEIGHTS,
  RUBRIC_DIMENSIONS,
  RUBRIC_QUESTIONS,
  type RubricDimension,
  type RubricWeights,
} from "../../core/wire/judge-schemas";
import type { TrajectoryStep } from "../../core/wire/trajectory";

/**
 * The judge's input: the task, the steps and the answer. A recorded `Trajectory` (an env's or an
 * inference-proxy session's) is one as it is; `steps` may instead be text already rendered.
 */
export interface JudgeInput {
  task: string;
  steps: string | readonly TrajectoryStep[];
  final_response: string | null;
}

/** Markers the prompts start with (the simulator's judge responder recognises them). */
export const RUBRIC_MARKER = "TRAJECTORY RUBRIC";
export const RANKING_MARKER = "TRAJECTORY RANKING";

const MAX_FIELD_CHARS = 2000;
const cut = (s: string) =>
  s.length > MAX_FIELD_CHARS ? `${s.slice(0, MAX_FIELD_CHARS)}… [${s.length} chars]` : s;

export function renderSteps(steps: JudgeInput["steps"]): string {
  if (typeof steps === "string") return steps.trim() === "" ? "(no steps)" : steps;
  if (steps.length === 0) return "(no steps)";
  return steps
    .map((step, i) => {
      const lines = [`Step ${i + 1}:`];
      if (step.thought) lines.push(`  thought: ${cut(step.thought)}`);
      const call = step.tool_call;
      if (call) {
        lines.push(`  tool call: ${call.name}(${cut(JSON.stringify(call.parameters))})`);
        if (call.error) lines.push(`  error: ${cut(call.error)}`);
        else if (call.result !== null) lines.push(`  result: ${cut(call.result)}`);
      }
      if (step.observation) lines.push(`  observation: ${cut(step.observation)}`);
      return lines.join("\n");
    })
    .join("\n");
}

/** The trajectory as rubric text: what every judge prompt quotes. */
export function renderTrajectory(input: JudgeInput, options: { withTask?: boolean } = {}): string {
  const parts = [];
  if (options.withTask !== false) parts.push(`Task:\n${input.task}`);
  parts.push(`Agent trajectory:\n${renderSteps(input.steps)}`);
  parts.push(`Final response:\n${input.final_response ? cut(input.final_response) : "(none)"}`);
  return parts.join("\n\n");
}

/** Weighted mean of 0–10 dimension scores, as 0..1; missing dimensions are left out. */
export function compositeScore(
  dimensions: Partial<Record<RubricDimension, number>>,
  weights: RubricWeights = DEFAULT_RUBRIC_WEIGHTS,
): number | null {
  let sum = 0;
  let total = 0;
  for (const d of RUBRIC_DIMENSIONS) {
    const v = dimensions[d];
    if (v === undefined) continue;
    sum += weights[d] * v;
    total += weights[d];
  }
  return total === 0 ? null : Math.min(1, Math.max(0, sum / total / 10));
}

export interface JudgeMessage {
  role: "system" | "user";
  content: string;
}

const dimensionLines = () =>
  RUBRIC_DIMENSIONS.map((d, i) => `${i + 1}. ${d}: ${RUBRIC_QUESTIONS[d]}`).join("\n");

const criteriaLine = (criteria: string | undefined) =>
  criteria?.trim() ? `\nTask-specific criteria: ${criteria}\n` : "";

const judgeSystemMessage = (judgeName: string): JudgeMessage => ({
  role: "system",
  content: `You are ${judgeName}, an expert evaluator of AI agents on a panel of judges.`,
});

/** Pointwise: one trajectory, five dimension scores in a JSON object. */
export function rubricPrompt(
  input: JudgeInput,
  options: { judgeName: string; criteria?: string },
): JudgeMessage[] {
  const criteria = criteriaLine(options.criteria);
  return [
    judgeSystemMessage(options.judgeName),
    {
      role: "user",
      content: `${RUBRIC_MARKER}\nAssess the agent's whole trajectory, not only its final response.\n\n${renderTrajectory(input)}\n${criteria}\nScore each dimension from 0 to 10:\n${dimensionLines()}\n\nReply with one JSON object and nothing else, e.g. {"task_completion": 7, "reasoning_quality": 6, "tool_usage": 8, "error_handling": 5, "efficiency": 7}.`,
    },
  ];
}

/**
 * Ranking (all trajectories of a group in one call, scored relative to each other): the shared
 * task is printed once; each trajectory gets a 0..1 score.
 */
export function rankingPrompt(
  inputs: readonly JudgeInput[],
  options: { judgeName: string; criteria?: string },
): JudgeMessage[] {
  const task = inputs[0]?.task ?? "";
  // The shared task is printed once above; trajectories of different tasks carry their own.
  const sameTask = inputs.every((x) => x.task === task);
  const body = inputs
    .map(
      (input, i) =>
        `<trajectory id="${i + 1}">\n${renderTrajectory(input, { withTask: !sameTask })}\n</trajectory>`,
    )
    .join("\n\n");
  const criteria = criteriaLine(options.criteria);
  return [
    judgeSystemMessage(options.judgeName),
    {
      role: "user",
      content: `${RANKING_MARKER}\nSeveral agents attempted the same task. Compare their trajectories with each other and give each a score from 0 to 1 (better trajectories score higher; the scores are used relative to each other).\n\nTask:\n${task}\n\n${body}\n${criteria}\nConsider: ${RUBRIC_DIMENSIONS.join(", ")}.\nReply with one JSON object and nothing else: {"scores": [{"id": 1, "score": 0.8}, …]} with one entry for each of the ${inputs.length} trajectories.`,
    },
  ];
}
