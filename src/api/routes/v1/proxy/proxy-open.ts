import {
  openSessionRequestSchema,
  openSessionResponseSchema,
} from "../../../../core/wire/task-registry";
import { runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { sessionIdOf, usableSession } from "../../../proxy";
import { jsonBody } from "../../../request";
import { taskExists } from "../../../storage/task-registry";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest } from "../../define";
import { sessionParams } from "./proxy-params";

export const proxyOpen = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/proxy/{session}/open",
    "x-scope": "contributor",
    summary: "Open a proxy session for a registered task",
    description:
      "Its group (at finish) is attributed to the task and to the finishing token. Opening again answers the session as it is (status, group_id once finished), so a client can resume after a lost answer.",
    request: { params: sessionParams, body: jsonRequest(openSessionRequestSchema) },
    responses: {
      200: { description: "The session.", content: jsonContent(openSessionResponseSchema) },
      ...bodyErrors(),
      ...errors({
        404: "The task is not registered in the run, or the session expired.",
        409: "The session exists for another task (or none): use a new session id.",
      }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const id = sessionIdOf(c);
    const { task } = await jsonBody(c, openSessionRequestSchema);
    if (!(await taskExists(c.env.DB, run, task))) {
      throw new ApiError(
        "NOT_FOUND",
        `no task '${task}' is registered in run '${run}'; register it first (POST /v1/runs/${run}/tasks)`,
      );
    }
    const session = await usableSession(c, run, id, { create: true, now: Date.now(), task });
    if (session.task !== task) {
      throw new ApiError(
        "CONFLICT",
        `inference-proxy session '${id}' was opened ${session.task === null ? "without a task" : `for task '${session.task}'`}; open a new session id for task '${task}'`,
      );
    }
    return c.json({
      session: id,
      task,
      status: session.status,
      base_url: `/v1/runs/${run}/proxy/${id}/v1`,
      expires_at: session.expiresAt,
      group_id: session.groupId,
    });
  },
);
