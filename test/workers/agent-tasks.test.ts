/**
 * agent_tasks inside workerd: the env, its judge panel and the report it writes into the group
 * run in the Worker runtime. The policy and the judges are in-process test doubles here (the
 * simulator over HTTP is covered in test/unit/envs/agent-tasks.test.ts).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { JudgeReport } from "../../src/core/wire/judge-schemas";
import { trajectorySchema } from "../../src/core/wire/trajectory";
import { createAgentTasksEnv } from "../../src/envs/agent-tasks";
import { builtinEnvs } from "../../src/envs/index";
import { CharTokenizer, FakeInference } from "../unit/envs/fakes";

const task = {
  id: "explain",
  task_type: "explanation",
  difficulty: 2,
  prompt: "Explain exponential backoff.",
  evaluation: { kind: "judge", rubric: "Mentions jitter." },
};

/** A judge double: replies with fixed dimension scores, or fails. */
const scripted = (name: string, reply: string | Error) => ({
  name,
  client: {
    chatCompletion: async () => {
      if (reply instanceof Error) throw reply;
      return {
        id: "j",
        model: name,
        choices: [
          {
            index: 0,
            message: { role: "assistant" as const, content: reply },
            finish_reason: "stop",
          },
        ],
      };
    },
  },
});

describe("agent_tasks in a Worker", () => {
  it("is a built-in env of the Worker", () => {
    expect(builtinEnvs.get("agent_tasks").name).toBe("agent_tasks");
  });

  it("scores a group with a three-judge panel (one failing) and records the report", async () => {
    const def = createAgentTasksEnv({
      judges: () => [
        scripted("a", "Score: 8/10"),
        scripted("b", '```json\n{"composite": 0.6}\n```'),
        scripted("broken", new Error("connection refused")),
      ],
    });
    const env = def.create(
      { tasks: [task], group_size: 2, max_steps_per_trajectory: 1, tools: [] },
      new FakeInference(),
      new CharTokenizer(),
    );
    const item = await env.getNextItem();
    expect(JSON.parse(JSON.stringify(item))).toEqual(item);
    const [group] = await env.collectTrajectories(item!);
    const g = Array.isArray(group) ? group[0]! : group!;
    const report = g.group_overrides!.judge as JudgeReport;
    expect(report.judges).toEqual(["a", "b", "broken"]);
    expect(report.scores).toEqual([
      [0.8, 0.8],
      [0.6, 0.6],
      [null, null],
    ]);
    expect(g.scores).toEqual([0.7, 0.7]);
    expect(report.failures.map((f) => f.reason)).toEqual([
      "connection refused",
      "connection refused",
    ]);
    expect(g.group_overrides).toMatchObject({ task_id: "explain", difficulty: 2 });
    // The episodes as trajectories (the model the proxy and the API use), with the panel's score.
    const trajectories = z.array(trajectorySchema).parse(g.trajectories);
    expect(trajectories.map((t) => [t.sequence, t.judge_score, t.success])).toEqual([
      [0, 0.7, null],
      [1, 0.7, null],
    ]);
  });
});
