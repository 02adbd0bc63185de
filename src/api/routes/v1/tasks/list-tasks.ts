import { taskListSchema } from "../../../../core/wire/task-registry";
import { runOf } from "../../../context";
import { ownGroupsOnly } from "../../../middleware/auth";
import { listTasks } from "../../../storage/task-registry";
import { defineRoute, jsonContent, runParams } from "../../define";

export const listTasksRoute = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/tasks",
    "x-scope": "read",
    "x-contributor-own": true,
    summary: "The run's registered tasks, with groups submitted and mean score per contributor",
    description:
      "Oldest first. Tallies count the groups of finished task sessions (POST …/proxy/{session}/open). A contributor token sees every task's totals but only its own line in `contributors`.",
    request: { params: runParams },
    responses: {
      200: { description: "The tasks.", content: jsonContent(taskListSchema) },
    },
  },
  async (c) => {
    const run = runOf(c);
    const tasks = await listTasks(c.env.DB, run, { tallyToken: ownGroupsOnly(c) });
    return c.json({ run, tasks });
  },
);
