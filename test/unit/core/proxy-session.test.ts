import { describe, expect, it } from "vitest";
import {
  emptyTracking,
  finishProblem,
  recordToolResults,
  sessionGroup,
  sessionTrajectories,
  trackChoices,
  turnAdvantages,
} from "../../../src/core/wire/proxy-session";

const M = -100;

function sampled(prompt: number[], output: number[], extra: Record<string, unknown> = {}) {
  return {
    promptTokens: prompt,
    outputTokens: output,
    outputLogprobs: output.map((_, i) => -0.1 * (i + 1)),
    finishReason: "stop",
    ...extra,
  };
}

describe("proxy session tracking", () => {
  it("extends the sequence whose ids prefix the new prompt, keeping earlier turns trainable", () => {
    const tracking = emptyTracking();
    trackChoices(tracking, [sampled([1, 2], [10, 11])]);
    trackChoices(tracking, [sampled([1, 2, 10, 11, 3], [20])]);
    expect(tracking.nodes).toHaveLength(1);
    expect(tracking.nodes[0]).toMatchObject({
      tokens: [1, 2, 10, 11, 3, 20],
      masked_tokens: [M, M, 10, 11, M, 20],
      logprobs: [1, 1, -0.1, -0.2, 1, -0.1],
    });
  });

  it("marks re-tokenized sequences, and their group carries group_overrides.retokenized and no logprobs", () => {
    const tracking = emptyTracking();
    trackChoices(tracking, [sampled([1, 2], [10, 11], { outputLogprobs: [], retokenized: true })]);
    expect(tracking.nodes[0]!.metadata).toMatchObject({
      retokenized: true,
      logprobs_unavailable: true,
    });
    expect(tracking.nodes[0]!.metadata.prompt_templated_by_server).toBeUndefined();
    const group = sessionGroup(tracking, { scores: [1] });
    expect(group.group_overrides).toEqual({ retokenized: true });
    expect(group.inference_logprobs).toBeUndefined();
    const exact = emptyTracking();
    trackChoices(exact, [sampled([1, 2], [10, 11])]);
    const exactGroup = sessionGroup(exact, { scores: [1] });
    expect(exactGroup.group_overrides).toBeUndefined();
    expect(exactGroup.inference_logprobs).toEqual([[1, 1, -0.1, -0.2]]);
  });

  it("starts a new, fully masked sequence when no tracked sequence prefixes the prompt", () => {
    const tracking = emptyTracking();
    trackChoices(tracking, [sampled([1, 2], [10, 11])]);
    // The server re-tokenized the earlier reply differently: 10, 12 instead of 10, 11.
    trackChoices(tracking, [sampled([1, 2, 10, 12, 3], [20])]);
    expect(tracking.nodes).toHaveLength(2);
    expect(tracking.nodes[1]!.masked_tokens).toEqual([M, M, M, M, M, 20]);
    expect(tracking.nodes[0]!.tokens).toEqual([1, 2, 10, 11]);
  });

  it("with n choices, the first extends and the others share the extended prefix", () => {
    const tracking = emptyTracking();
    trackChoices(tracking, [sampled([1], [5])]);
    trackChoices(tracking, [sampled([1, 5, 2], [7]), sampled([1, 5, 2], [8, 9])]);
    expect(tracking.nodes.map((n) => n.masked_tokens)).toEqual([
      [M, 5, M, 7],
      [M, 5, M, 8, 9],
    ]);
  });

  it("pads missing logprobs with 1.0 so lengths always match the tokens", () => {
    const tracking = emptyTracking();
    trackChoices(tracking, [{ ...sampled([1], [5, 6, 7]), outputLogprobs: [-0.5] }]);
    expect(tracking.nodes[0]!.logprobs).toEqual([1, -0.5, 1, 1]);
  });
});

describe("finishing a session", () => {
  it("checks that every per-sequence list matches the tracked sequences", () => {
    const tracking = emptyTracking();
    expect(finishProblem(tracking, { scores: [1] })).toMatch(/no tracked completions/);
    trackChoices(tracking, [sampled([1], [5]), sampled([1], [6])]);
    expect(finishProblem(tracking, { scores: [1] })).toBe(
      "scores has 1 entries but the session tracks 2 sequences (see GET …/state)",
    );
    expect(finishProblem(tracking, { scores: [1, 0], success: [true] })).toMatch(/^success has 1/);
    expect(finishProblem(tracking, { scores: [1, 0] })).toBeNull();
  });

  it("folds per-turn scores into per-token advantages, one value per trainable run", () => {
    expect(turnAdvantages([M, 5, 6, M, 7, M, 8], [0.5, -1])).toEqual([0, 0.5, 0.5, 0, -1, 0, -1]);
    expect(turnAdvantages([M, 5], [])).toEqual([0, 0]);
  });

  it("builds the group and one trajectory per sequence from the conversation", () => {
    const tracking = emptyTracking();
    const call = {
      id: "call_1",
      type: "function",
      function: { name: "calc", arguments: '{"x":1}' },
    };
    const conversation = [
      { role: "user", content: "task: add" },
      { role: "assistant", content: "thinking", tool_calls: [call] },
      { role: "tool", tool_call_id: "call_1", content: "error: bad input" },
      { role: "assistant", content: "done <answer>1</answer>" },
    ];
    tracking.tool_timing.call_1 = { issued_at: 1000, answered_at: null };
    recordToolResults(tracking, conversation, 1250);
    trackChoices(tracking, [sampled([1], [5], { conversation, turnTimes: [900, 1300] })]);
    const body = { scores: [0.5], turn_scores: [[1]], success: [false], judge_scores: [7] };
    const group = sessionGroup(tracking, body);
    expect(group).toMatchObject({
      tokens: [[1, 5]],
      masks: [[M, 5]],
      scores: [0.5],
      inference_logprobs: [[1, -0.1]],
      advantages: [[0, 1]],
    });
    expect(group.messages?.[0]).toHaveLength(4);
    const [trajectory] = sessionTrajectories(tracking, body, 800, 1400);
    expect(trajectory).toEqual({
      task: "task: add",
      steps: [
        {
          thought: "thinking",
          tool_call: {
            name: "calc",
            parameters: { x: 1 },
            result: null,
            error: "error: bad input",
            latency_ms: 250,
          },
          observation: "error: bad input",
          timestamp: 900,
        },
        { thought: "done <answer>1</answer>", tool_call: null, observation: null, timestamp: 1300 },
      ],
      final_response: "done <answer>1</answer>",
      success: false,
      judge_score: 7,
      token_count: 2,
      wall_time_ms: 600,
      sequence: 0,
      source: "proxy",
    });
  });
});
