/**
 * agent_tasks end to end on the inference simulator over real HTTP: the policy through the
 * simulator's toy policy, a three-judge panel on their own endpoints (one strict, one failing on
 * purpose with a 404), calibration fitted on a labelled set and applied, pointwise and ranking
 * modes; hidden tests really run in the local sandbox; plus the tasks file's validation and the
 * difficulty curriculum.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEnv, type InferenceHandle, openInference } from "../../../src/cli/inference";
import { parseTasksFile } from "../../../src/cli/tasks-file";
import type { ScoredDataGroup } from "../../../src/core/wire/group-types";
import {
  type JudgeEndpointInput,
  JudgeEndpointSchema,
  type JudgeReport,
  parseLabelledSet,
} from "../../../src/core/wire/judge-schemas";
import { selectTasks, type Task } from "../../../src/core/wire/tasks";
import { applyCalibration, JudgePanel, panelJudges } from "../../../src/env-sdk/judges/index";
import { processEnv } from "../../../src/env-sdk/runtime/process";
import {
  type AgentTasksEnv,
  createAgentTasksEnv,
  type RunTests,
} from "../../../src/envs/agent-tasks";
import { createLocalSandbox } from "../../../src/sandbox/node/local-sandbox";
import { setSandboxProvider } from "../../../src/sandbox/registry";

const ROOT = join(import.meta.dirname, "../../..");
const TASKS_FILE = join(ROOT, "examples/agent-tasks/tasks.jsonl");
const tasks = parseTasksFile(readFileSync(TASKS_FILE, "utf8"), "tasks.jsonl");
const byKind = (kind: Task["evaluation"]["kind"]) =>
  tasks.filter((t) => t.evaluation.kind === kind);

/**
 * TEST DOUBLE for an injected test runner (custom wiring): "passes" each `assert` line whose
 * expected string literal occurs in the code. It runs nothing.
 */
const fakeRunTests: RunTests = async (code, tests) => {
  const asserts = tests.split("\n").filter((l) => l.startsWith("assert"));
  const passed = asserts.filter((l) => {
    const expected = /==\s*'([^']*)'/.exec(l)?.[1];
    return expected !== undefined && code.includes(`'${expected}'`);
  }).length;
  return { passed, total: asserts.length };
};

describe("tasks file", () => {
  it("parses the example tasks (JSONL) with ids, tools and all three evaluation kinds", () => {
    expect(tasks.map((t) => t.id)).toEqual([
      "sum-primes",
      "store-area",
      "explain-backoff",
      "explain-idempotency",
      "fizzbuzz",
    ]);
    expect(new Set(tasks.map((t) => t.evaluation.kind))).toEqual(
      new Set(["reference", "judge", "hidden_tests"]),
    );
  });

  it("rejects a bad task with the file, line and field to fix", () => {
    const bad = `${JSON.stringify({ task_type: "x", difficulty: 1, prompt: "p", evaluation: { kind: "reference", answer: "1" } })}\n\n${JSON.stringify({ task_type: "x", difficulty: 11, prompt: "p", evaluation: { kind: "reference", answer: "1" } })}`;
    expect(() => parseTasksFile(bad, "t.jsonl")).toThrow(/^t\.jsonl:3 task 2: difficulty: .*10/);
    expect(() =>
      parseTasksFile(
        "- task_type: x\n  difficulty: 2\n  prompt: p\n  evaluation: {kind: oracle}\n",
        "t.yaml",
      ),
    ).toThrow(/^t\.yaml task 1: evaluation\.kind: /);
    expect(() =>
      parseTasksFile(
        JSON.stringify([
          { id: "a", task_type: "x", difficulty: 1, prompt: "p", evaluation: { kind: "judge" } },
          { id: "a", task_type: "x", difficulty: 1, prompt: "q", evaluation: { kind: "judge" } },
        ]),
        "t.json",
      ),
    ).toThrow(/t\.json task 2: id "a" is already used by t\.json task 1/);
    expect(() => parseTasksFile("{not json", "t.jsonl")).toThrow(/t\.jsonl:1: not valid JSON/);
    expect(() => parseTasksFile("[]", "t.json")).toThrow(/t\.json: no tasks/);
  });

  it("orders and filters by difficulty for the curriculum", () => {
    const shuffled = [tasks[3]!, tasks[0]!, tasks[4]!, tasks[1]!];
    expect(selectTasks(shuffled, { order: "easy_first" }).map((t) => t.difficulty)).toEqual([
      1, 2, 4, 5,
    ]);
    expect(
      selectTasks(shuffled, { order: "hard_first", maxDifficulty: 4 }).map((t) => t.id),
    ).toEqual(["explain-idempotency", "store-area", "sum-primes"]);
  });
});

describe("agent_tasks on the simulator", () => {
  let inference: InferenceHandle;
  let judges: JudgeEndpointInput[];
  const sandbox = createLocalSandbox({ python: { size: 1, maxConcurrent: 2 } });

  beforeAll(async () => {
    setSandboxProvider(() => sandbox);
    inference = await openInference({
      serverType: "vllm",
      model: "sim-policy",
      tokenizer: "qwen3",
      simLatencyMs: 0,
      simSeed: 0,
    });
    const url = inference.simulator!.url;
    judges = [
      { name: "judge-a", base_url: `${url}/v1`, model_name: "judge-a" },
      { name: "judge-strict", base_url: `${url}/v1`, model_name: "judge-strict" },
      // Fails on purpose: no such route on that server (404, not retried).
      { name: "judge-broken", base_url: `${url}/no-such-api/v1`, model_name: "judge-broken" },
    ];
  });
  afterAll(async () => {
    setSandboxProvider(null);
    await Promise.all([inference?.close(), sandbox.close?.()]);
  });

  async function run(config: Record<string, unknown>, groups: number, deps = {}) {
    const env = (await createEnv(
      createAgentTasksEnv(deps),
      { group_size: 4, judges, ...config },
      inference,
      "qwen3",
    )) as unknown as AgentTasksEnv;
    const out: ScoredDataGroup[] = [];
    const progress = await processEnv(env, { groups, onGroup: (g) => void out.push(g) });
    return { env, out, progress };
  }

  it("fits calibrations on a labelled set: the strict judge's is accepted, the broken judge has none", async () => {
    const labels = parseLabelledSet(
      readFileSync(join(ROOT, "examples/agent-tasks/labels.jsonl"), "utf8"),
      "labels.jsonl",
    );
    const panel = new JudgePanel(panelJudges(judges.map((j) => JudgeEndpointSchema.parse(j))));
    const fitted = await panel.calibrate(labels.map((l) => ({ input: l, label: l.label })));
    const strict = fitted["judge-strict"]!;
    expect(strict).toMatchObject({ accepted: true, n_fit: 8, n_heldout: 4 });
    if (!("accepted" in strict)) throw new Error("unreachable");
    expect(strict.heldout_mae_after).toBeLessThan(strict.heldout_mae_before);
    // Strict scores good answers about 0.5 where the labels say about 0.9: the fit lifts them.
    expect(applyCalibration(0.5, strict)).toBeGreaterThan(0.7);
    expect(fitted["judge-broken"]).toMatchObject({ error: expect.stringMatching(/at least 4/) });

    const calibration = Object.fromEntries(
      Object.entries(fitted).filter(([, c]) => "accepted" in c),
    );
    const { out, progress } = await run(
      { tasks: byKind("judge"), calibration, judge_mode: "pointwise" },
      2,
    );
    expect(progress.failures).toBe(0);
    expect(out).toHaveLength(2);
    for (const group of out) {
      const report = group.group_overrides!.judge as JudgeReport;
      expect(report.mode).toBe("pointwise");
      expect(report.judges).toEqual(["judge-a", "judge-strict", "judge-broken"]);
      expect(report.calibrated).toContain("judge-strict");
      expect(report.calls).toBe(12);
      // The broken judge failed on every answer, with the server's reason recorded.
      expect(report.scores[2]).toEqual([null, null, null, null]);
      expect(report.failures.map((f) => [f.judge, f.answer])).toEqual([
        ["judge-broken", 0],
        ["judge-broken", 1],
        ["judge-broken", 2],
        ["judge-broken", 3],
      ]);
      expect(report.failures[0]!.reason).toMatch(/404/);
      expect(report.kendall_tau).not.toBeNull();
      expect(group.scores).toEqual(report.panel);
      for (const s of group.scores) expect(s).toBeGreaterThanOrEqual(0);
      expect(group.group_overrides).toMatchObject({ task_type: "explanation" });
      // Each answer's trajectory is stored beside the group, with the panel's score.
      expect(group.trajectories!.map((t) => t.judge_score)).toEqual(group.scores);
      expect(group.trajectories!.map((t) => [t.sequence, t.source, t.success])).toEqual(
        [0, 1, 2, 3].map((i) => [i, "env", null]),
      );
    }
    // Thorough answers beat vague ones once calibrated.
    const thorough: number[] = [];
    const vague: number[] = [];
    for (const g of out) {
      g.messages!.forEach((m, i) => {
        const last = String(m.at(-1)?.content ?? "");
        (last.includes("Key points:") ? thorough : vague).push(g.scores[i]!);
      });
    }
    expect(thorough.length).toBeGreaterThan(0);
    expect(vague.length).toBeGreaterThan(0);
    expect(Math.min(...thorough)).toBeGreaterThan(Math.max(...vague));
  });

  it("ranking mode scores a whole group in one call per judge", async () => {
    const before = inference.simulator!.stats().byRoute["POST /v1/chat/completions"] ?? 0;
    const { out } = await run({ tasks: byKind("judge").slice(0, 1), judge_mode: "ranking" }, 1);
    const after = inference.simulator!.stats().byRoute["POST /v1/chat/completions"] ?? 0;
    const report = out[0]!.group_overrides!.judge as JudgeReport;
    expect(report.mode).toBe("ranking");
    expect(report.calls).toBe(3);
    // Two working judges, one chat call each for the group of four.
    expect(after - before).toBe(2);
    expect(report.failures).toEqual([
      { judge: "judge-broken", answer: null, reason: expect.stringMatching(/404/) },
    ]);
    expect(report.scores[0]).toHaveLength(4);
  });

  it("drops a group, with the reason, when too few judges answer", async () => {
    const { out, progress } = await run(
      { tasks: byKind("judge").slice(0, 1), min_judges: 3 },
      1,
    ).catch((e) => ({ out: [], progress: { dropReasons: { error: String(e) } } }));
    expect(out).toHaveLength(0);
    expect(Object.keys(progress.dropReasons)[0]).toMatch(/only N of N judges scored an answer/);
  }, 30_000);

  it("scores reference answers, and hidden tests by running them in the sandbox, without judges", async () => {
    // Six answers per group: both fizzbuzz candidates get sampled on the seeded simulator.
    const { out } = await run(
      { tasks: [...byKind("reference"), ...byKind("hidden_tests")], group_size: 6 },
      3,
    );
    expect(out.map((g) => g.group_overrides!.task_id).sort()).toEqual([
      "fizzbuzz",
      "store-area",
      "sum-primes",
    ]);
    const fizzbuzzScores = { solution: [] as number[], stub: [] as number[] };
    for (const g of out) {
      expect(g.group_overrides!.judge).toBeUndefined();
      const fizzbuzz = g.group_overrides!.task_id === "fizzbuzz";
      g.messages!.forEach((m, i) => {
        const answer = String(m.at(-1)?.content ?? "");
        if (fizzbuzz)
          fizzbuzzScores[answer.includes("def fizzbuzz") ? "solution" : "stub"].push(g.scores[i]!);
        else expect(g.scores[i]).toBe(answer.includes("<answer>unknown</answer>") ? 0 : 1);
        // The trajectory says whether the answer was right; no judge scored it.
        expect(g.trajectories![i]).toMatchObject({
          sequence: i,
          success: g.scores[i] === 1,
          judge_score: null,
          source: "env",
          final_response: answer,
        });
      });
    }
    // The known solution passes all four hidden asserts; the `pass` stub defines nothing.
    expect(fizzbuzzScores.solution.length).toBeGreaterThan(0);
    expect(fizzbuzzScores.stub.length).toBeGreaterThan(0);
    expect(new Set(fizzbuzzScores.solution)).toEqual(new Set([1]));
    expect(Math.max(...fizzbuzzScores.stub)).toBeLessThan(1);
    // The agent loop ran the calculator for tasks that need it, fed the result back and kept
    // the call as a trajectory step.
    const toolTurns = out
      .flatMap((g) => g.messages!.flat())
      .filter((m) => m.role === "tool")
      .map((m) => m.content);
    expect(toolTurns).toEqual(expect.arrayContaining(["calculator result: 28"]));
    const steps = out.flatMap((g) => g.trajectories!.flatMap((t) => t.steps));
    expect(steps).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          tool_call: expect.objectContaining({ name: "calculator", result: "28", error: null }),
          observation: "calculator result: 28",
        }),
      ]),
    );
  }, 60_000);

  it("counts each hidden assert: an answer right on some cases scores the fraction passed", async () => {
    const env = (await createEnv(
      createAgentTasksEnv(),
      { group_size: 2, tasks: byKind("hidden_tests") },
      inference,
      "qwen3",
    )) as unknown as AgentTasksEnv;
    const partial = "```python\ndef fizzbuzz(n):\n    return 'Fizz' if n % 3 == 0 else str(n)\n```";
    const looping = "```python\ndef fizzbuzz(n):\n    while True:\n        pass\n```";
    const { scores, success } = await env.evaluateEpisodes(byKind("hidden_tests")[0]!, [
      { steps: [], finalResponse: partial },
      { steps: [], finalResponse: "no code, just words" },
      { steps: [], finalResponse: null },
    ]);
    // 'Fizz' for 3 and '7' for 7 pass; 5 and 15 fail.
    expect(scores).toEqual([0.5, 0, 0]);
    expect(success).toEqual([false, false, false]);
    const slow = await env.evaluateEpisodes(byKind("hidden_tests")[0]!, [
      { steps: [], finalResponse: looping },
    ]);
    expect(slow.scores).toEqual([0]);
  }, 60_000);

  it("uses an injected runTests instead of the sandbox (custom wiring)", async () => {
    const { out } = await run({ tasks: byKind("hidden_tests") }, 1, { runTests: fakeRunTests });
    const g = out[0]!;
    g.messages!.forEach((m, i) => {
      const answer = String(m.at(-1)?.content ?? "");
      // The double finds 3 of the 4 expected literals in the known solution.
      expect(g.scores[i]).toBe(answer.includes("def fizzbuzz") ? 0.75 : 0);
    });
  });

  it("drops hidden-test tasks with a reason when no sandbox is configured", async () => {
    const env = (await createEnv(
      createAgentTasksEnv(),
      { group_size: 2, tasks: byKind("hidden_tests") },
      inference,
      "qwen3",
    )) as unknown as AgentTasksEnv;
    setSandboxProvider(null);
    try {
      const progress = await processEnv(env, { groups: 1, maxItems: 1, onGroup: () => {} });
      expect(Object.keys(progress.dropReasons)).toEqual([
        expect.stringMatching(/^hidden tests need a sandbox: no sandbox is configured/),
      ]);
    } finally {
      setSandboxProvider(() => sandbox);
    }
  });

  it("refuses tasks whose required tools the env does not offer, or rubric tasks without judges", async () => {
    const def = createAgentTasksEnv();
    await expect(
      createEnv(def, { tasks: byKind("reference"), tools: ["kv_get"] }, inference, "qwen3"),
    ).rejects.toThrow(
      /task "sum-primes" requires calculator, not among the tools offered \(kv_get\)/,
    );
    await expect(
      createEnv(def, { tasks: byKind("judge"), judges: [] }, inference, "qwen3"),
    ).rejects.toThrow(/judged by a rubric but no judges are configured/);
  });

  it("adaptive curriculum: serves the easiest level until it is mastered, checkpointed", async () => {
    const env = (await createEnv(
      createAgentTasksEnv(),
      { tasks, judges, curriculum: "adaptive", advance_window: 2, advance_threshold: 0.5 },
      inference,
      "qwen3",
    )) as unknown as AgentTasksEnv;
    const first = await env.getNextItem();
    expect(first.difficulty).toBe(1);
    expect((await env.getNextItem()).difficulty).toBe(1);
    env.recordScores(first, [1, 0]);
    env.recordScores(first, [1, 1]);
    expect(env.curriculumLevel).toBe(2);
    const state = env.saveCheckpoint();
    const again = (await createEnv(
      createAgentTasksEnv(),
      { tasks, judges, curriculum: "adaptive" },
      inference,
      "qwen3",
    )) as unknown as AgentTasksEnv;
    again.loadCheckpoint(state);
    expect(again.curriculumLevel).toBe(2);
  });
});
