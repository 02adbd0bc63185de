import {
  registerTaskRequestSchema,
  registerTaskResponseSchema,
} from "../../../../core/wire/task-registry";
import { runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { submitterOf } from "../../../middleware/auth";
import { jsonBody } from "../../../request";
import { registerTask } from "../../../storage/task-registry";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest, runParams } from "../../define";

export const registerTaskRoute = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/tasks",
    "x-scope": "contributor",
    summary: "Register a task type contributors submit trajectories for",
    description:
      "Records the task's name, difficulty, required tools and description with the registering token. Registering it again with the same definition changes nothing; its registrant may change it.",
    request: { params: runParams, body: jsonRequest(registerTaskRequestSchema) },
    responses: {
      200: {
        description: "The task as stored, and whether this call created or changed it.",
        content: jsonContent(registerTaskResponseSchema),
      },
      ...bodyErrors(),
      ...errors({ 409: "Another token registered a task of this name in the run." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const body = await jsonBody(c, registerTaskRequestSchema);
    const outcome = await registerTask(c.env.DB, run, body, submitterOf(c), Date.now());
    if (outcome.status === "taken") {
      throw new ApiError(
        "CONFLICT",
        `task '${body.name}' is already registered in run '${run}' by another token; choose another name, or contribute to it as it is (GET /v1/runs/${run}/tasks)`,
      );
    }
    return c.json({ task: outcome.task, status: outcome.status });
  },
);
