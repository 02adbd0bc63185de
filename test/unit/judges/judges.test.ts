import { describe, expect, it } from "vitest";
import { parseLabelledSet } from "../../../src/core/wire/judge-schemas";
import {
  type Trajectory,
  type TrajectoryStep,
  trajectorySchema,
  trajectoryStepSchema,
} from "../../../src/core/wire/trajectory";
import {
  applyCalibration,
  fitCalibration,
  fitLinear,
  JudgePanel,
  kendallTau,
  meanPairwiseTau,
  parseRankingReply,
  parseRubricReply,
  renderTrajectory,
  rubricPrompt,
  trimmedMean,
} from "../../../src/env-sdk/judges/index";

const all = (v: number) =>
  JSON.stringify({
    task_completion: v,
    reasoning_quality: v,
    tool_usage: v,
    error_handling: v,
    efficiency: v,
  });

describe("parseRubricReply", () => {
  it("reads a bare JSON object of the five dimensions into a weighted composite", () => {
    const r = parseRubricReply(
      '{"task_completion": 10, "reasoning_quality": 0, "tool_usage": 0, "error_handling": 0, "efficiency": 0}',
    );
    expect(r).toMatchObject({ ok: true, clamped: false });
    // task_completion weighs 0.4 by default
    expect(r.ok && r.score).toBeCloseTo(0.4);
  });

  it("reads JSON inside a fenced block after prose", () => {
    const r = parseRubricReply(`Overall decent.\n\`\`\`json\n${all(7)}\n\`\`\`\nThanks`);
    expect(r.ok && r.score).toBeCloseTo(0.7);
  });

  it("reads 'Score: 7/10' and a bare 0..1 composite", () => {
    expect(parseRubricReply("Solid work.\nScore: 7/10")).toMatchObject({ ok: true, score: 0.7 });
    expect(parseRubricReply("Final composite score (0.0-1.0): 0.85")).toMatchObject({
      ok: true,
      score: 0.85,
    });
    expect(parseRubricReply("score = 6")).toMatchObject({ ok: true, score: 0.6 });
  });

  it("reads per-dimension lines written as text", () => {
    const text = [
      "Task completion: 8/10",
      "Reasoning quality: 6/10",
      "Tool usage: 8/10",
      "Error handling: 8/10",
      "Efficiency: 8/10",
    ].join("\n");
    const r = parseRubricReply(text);
    expect(r.ok && r.score).toBeCloseTo(0.8 - 0.2 * 0.2);
  });

  it("clamps out-of-range values and says so", () => {
    expect(parseRubricReply("Score: 12/10")).toMatchObject({ ok: true, score: 1, clamped: true });
    expect(parseRubricReply("Score: -3")).toMatchObject({ ok: true, score: 0, clamped: true });
    const r = parseRubricReply(all(14));
    expect(r).toMatchObject({ ok: true, score: 1, clamped: true });
  });

  it("records a failure with a reason when there is no score", () => {
    const r = parseRubricReply("I cannot evaluate this trajectory.");
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/no score in the reply \("I cannot evaluate/);
    expect(parseRubricReply("")).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/empty/),
    });
  });
});

describe("parseRankingReply", () => {
  it("reads {scores: [{id, score}]} in any order, and text lines", () => {
    const r = parseRankingReply(
      '```json\n{"scores": [{"id": 2, "score": 0.2}, {"id": 1, "score": 0.9}]}\n```',
      2,
    );
    expect(r).toEqual({ ok: true, scores: [0.9, 0.2], clamped: false });
    expect(parseRankingReply("Trajectory 1: 0.5\nTrajectory 2: 0.7", 2)).toMatchObject({
      scores: [0.5, 0.7],
    });
  });

  it("reads a reply out of 10 on one scale for all trajectories", () => {
    expect(parseRankingReply('{"scores": [8, 3, 10]}', 3)).toMatchObject({
      ok: true,
      scores: [0.8, 0.3, 1],
    });
  });

  it("fails, naming the trajectory, when one has no score", () => {
    expect(parseRankingReply('{"scores": [{"id": 1, "score": 0.4}]}', 3)).toEqual({
      ok: false,
      reason: "the ranking reply has no score for trajectory 2, 3",
    });
  });
});

describe("trimmedMean", () => {
  it("drops the lowest and highest of three or more", () => {
    expect(trimmedMean([0.1, 0.5, 0.6, 1])).toBeCloseTo(0.55);
    expect(trimmedMean([0, 0.4, 1])).toBeCloseTo(0.4);
  });
  it("averages two values as they are", () => {
    expect(trimmedMean([0.2, 0.4])).toBeCloseTo(0.3);
    expect(() => trimmedMean([])).toThrow(/no values/);
  });
});

describe("Kendall's tau", () => {
  it("is 1 for the same order, -1 for the reverse, tie-corrected otherwise", () => {
    expect(kendallTau([1, 2, 3, 4], [10, 20, 30, 40])).toBe(1);
    expect(kendallTau([1, 2, 3, 4], [4, 3, 2, 1])).toBe(-1);
    // 5 concordant, 0 discordant, one tie in b: 5 / sqrt(6 * 5)
    expect(kendallTau([1, 2, 3, 4], [1, 2, 3, 3])).toBeCloseTo(5 / Math.sqrt(30));
    expect(kendallTau([1, 1, 1], [1, 2, 3])).toBeNull();
  });

  it("averages judge pairs over the answers both scored", () => {
    const tau = meanPairwiseTau([
      [0.1, 0.5, 0.9],
      [0.2, 0.6, 0.8],
      [null, null, null],
      [0.9, 0.5, null],
    ]);
    // pairs: (0,1)=1, (0,3) on two answers = -1, (1,3) = -1
    expect(tau).toBeCloseTo(-1 / 3);
    expect(meanPairwiseTau([[0.1, 0.2]])).toBeNull();
  });
});

describe("calibration", () => {
  it("fits offset and scale by least squares", () => {
    const fit = fitLinear([
      { raw: 0, label: 0.2 },
      { raw: 0.5, label: 0.45 },
      { raw: 1, label: 0.7 },
    ]);
    expect(fit.scale).toBeCloseTo(0.5);
    expect(fit.offset).toBeCloseTo(0.2);
  });

  it("accepts a fit that lowers held-out error and applies it", () => {
    // A strict judge: 0.3 below the labels everywhere.
    const labels = [0.9, 0.1, 0.8, 0.2, 0.85, 0.15, 0.9, 0.1, 0.7];
    const points = labels.map((label) => ({ raw: Math.max(0, label - 0.3), label }));
    const cal = fitCalibration(points);
    expect(cal.accepted).toBe(true);
    expect(cal.n_heldout).toBe(3);
    expect(cal.heldout_mae_after).toBeLessThan(cal.heldout_mae_before);
    expect(applyCalibration(0.5, cal)).toBeCloseTo(0.8, 1);
    expect(applyCalibration(5, cal)).toBe(1);
  });

  it("rejects a fit that does not help on the held-out points, and then changes nothing", () => {
    // Already calibrated on the fitted points; the held-out ones disagree with any line.
    const points = [
      { raw: 0.1, label: 0.1 },
      { raw: 0.9, label: 0.9 },
      { raw: 0.5, label: 0.5 },
      { raw: 0.2, label: 0.2 },
      { raw: 0.8, label: 0.8 },
      { raw: 0.5, label: 0.5 },
    ];
    const cal = fitCalibration(points);
    expect(cal.accepted).toBe(false);
    expect(applyCalibration(0.3, cal)).toBe(0.3);
  });

  it("needs enough labelled scores", () => {
    expect(() => fitCalibration([{ raw: 0.1, label: 0.2 }])).toThrow(/at least 4/);
  });
});

describe("renderTrajectory", () => {
  it("renders structured steps: thoughts, tool calls with results or errors, the final response", () => {
    const text = renderTrajectory({
      task: "Add 2 and 3",
      steps: [
        {
          thought: "use the calculator",
          tool_call: {
            name: "calculator",
            parameters: { expression: "2+3" },
            result: "5",
            error: null,
            latency_ms: 1,
          },
          observation: "calculator result: 5",
          timestamp: 1,
        },
        {
          thought: "",
          tool_call: {
            name: "kv_set",
            parameters: {},
            result: null,
            error: "'key' must be a string",
            latency_ms: 0,
          },
          observation: null,
          timestamp: 2,
        },
      ],
      final_response: "<answer>5</answer>",
    });
    expect(text).toContain("Task:\nAdd 2 and 3");
    expect(text).toContain('tool call: calculator({"expression":"2+3"})\n  result: 5');
    expect(text).toContain("Step 2:\n  tool call: kv_set({})\n  error: 'key' must be a string");
    expect(text).toContain("Final response:\n<answer>5</answer>");
    expect(renderTrajectory({ task: "t", steps: "", final_response: null })).toContain(
      "(no steps)\n\nFinal response:\n(none)",
    );
  });

  it("takes a proxy session's Trajectory as it is, and labelled steps parse to trajectory steps", () => {
    const trajectory: Trajectory = trajectorySchema.parse({
      task: "What is 6*7?",
      steps: [
        {
          thought: "call the calculator",
          tool_call: {
            name: "calculator",
            parameters: { expression: "6*7" },
            result: null,
            error: null,
            latency_ms: null,
          },
          observation: null,
          timestamp: 1_700_000_000_000,
        },
      ],
      final_response: "<answer>42</answer>",
      success: null,
      judge_score: null,
      token_count: 12,
      wall_time_ms: 30,
      sequence: 0,
      source: "proxy",
    });
    const [, user] = rubricPrompt(trajectory, { judgeName: "j" });
    expect(user!.content).toContain(
      'Task:\nWhat is 6*7?\n\nAgent trajectory:\nStep 1:\n  thought: call the calculator\n  tool call: calculator({"expression":"6*7"})\n\nFinal response:\n<answer>42</answer>',
    );
    const [labelled] = parseLabelledSet(
      JSON.stringify({
        task: "t",
        steps: [{ thought: "x", tool_call: { name: "kv_get" } }],
        final_response: "y",
        label: 0.5,
      }),
      "labels.jsonl",
    );
    const steps: TrajectoryStep[] = trajectoryStepSchema.array().parse(labelled!.steps);
    expect(steps[0]!.tool_call).toEqual({
      name: "kv_get",
      parameters: {},
      result: null,
      error: null,
      latency_ms: null,
    });
    expect(renderTrajectory(labelled!)).toContain("tool call: kv_get({})");
  });
});

describe("JudgePanel with scripted judges (test doubles answering fixed replies)", () => {
  const reply = (content: string) => ({
    id: "x",
    model: "m",
    choices: [
      { index: 0, message: { role: "assistant" as const, content }, finish_reason: "stop" },
    ],
  });
  const judge = (name: string, answer: (prompt: string) => string) => ({
    name,
    client: {
      chatCompletion: async (p: { messages: { content: unknown }[] }) =>
        reply(answer(String(p.messages.at(-1)?.content ?? ""))),
    },
  });
  const dims = (tc: number, rest: number) =>
    `{"task_completion": ${tc}, "reasoning_quality": ${rest}, "tool_usage": ${rest}, "error_handling": ${rest}, "efficiency": ${rest}}`;
  const input = (final: string) => ({ task: "t", steps: "", final_response: final });

  it("applies per-call weights and criteria, trims across judges and records failures", async () => {
    const prompts: string[] = [];
    const panel = new JudgePanel(
      [
        judge("a", (p) => {
          prompts.push(p);
          return dims(10, 0);
        }),
        judge("b", () => dims(10, 0)),
        judge("c", () => "no idea"),
      ],
      { minJudges: 2 },
    );
    const onlyCompletion = {
      task_completion: 1,
      reasoning_quality: 0,
      tool_usage: 0,
      error_handling: 0,
      efficiency: 0,
    };
    const { scores, report } = await panel.scoreGroup([input("x"), input("y")], "pointwise", {
      criteria: "Mentions jitter.",
      weights: onlyCompletion,
    });
    expect(scores).toEqual([1, 1]);
    expect(prompts[0]).toContain("Task-specific criteria: Mentions jitter.");
    expect(report.failures).toEqual([
      { judge: "c", answer: 0, reason: 'no score in the reply ("no idea")' },
      { judge: "c", answer: 1, reason: 'no score in the reply ("no idea")' },
    ]);
    expect(report.calls).toBe(6);
    // Default weights: task_completion is 0.4 of the composite.
    const plain = await panel.scoreGroup([input("x")]);
    expect(plain.scores[0]).toBeCloseTo(0.4);
  });

  it("gives no panel score to an answer with fewer than minJudges scores", async () => {
    const panel = new JudgePanel([judge("a", () => "Score: 8/10"), judge("b", () => "")], {
      minJudges: 2,
    });
    const { scores, report } = await panel.scoreGroup([input("x")]);
    expect(scores).toEqual([null]);
    expect(report.scores).toEqual([[0.8], [null]]);
  });

  it("ranking: one call per judge, calibrated scores, tau across judges", async () => {
    let calls = 0;
    const ranked = (s: number[]) => () => {
      calls++;
      return JSON.stringify({ scores: s.map((score, i) => ({ id: i + 1, score })) });
    };
    const panel = new JudgePanel([
      { ...judge("a", ranked([0.9, 0.1, 0.5])) },
      {
        ...judge("strict", ranked([0.6, 0.0, 0.2])),
        calibration: {
          offset: 0.3,
          scale: 1,
          accepted: true,
          heldout_mae_before: 0.3,
          heldout_mae_after: 0.05,
          n_fit: 8,
          n_heldout: 4,
        },
      },
    ]);
    const { report } = await panel.scoreGroup([input("1"), input("2"), input("3")], "ranking");
    expect(calls).toBe(2);
    expect(report.scores[1]![0]).toBeCloseTo(0.9);
    expect(report.kendall_tau).toBe(1);
    expect(report.calibrated).toEqual(["strict"]);
  });
});
