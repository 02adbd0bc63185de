import { finishSessionResponseSchema } from "../../../../core/wire/api-schemas";
import { finishSessionRequestSchema } from "../../../../core/wire/proxy-session";
import { runOf } from "../../../context";
import { finishProxySession, sessionIdOf } from "../../../proxy";
import { jsonBody } from "../../../request";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest } from "../../define";
import { sessionParams } from "./proxy-params";

export const proxyFinish = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/proxy/{session}/finish",
    "x-scope": "contributor",
    summary: "Score a proxy session: it becomes one scored group of the run",
    description:
      "One score per tracked sequence (GET …/state lists them); optional turn_scores become per-token advantages. Finishing again answers the same group.",
    request: { params: sessionParams, body: jsonRequest(finishSessionRequestSchema) },
    responses: {
      200: { description: "The group.", content: jsonContent(finishSessionResponseSchema) },
      ...bodyErrors("The body fails the schema, or its lists do not match the tracked sequences."),
      ...errors({ 404: "No such session, or it expired (the message says when)." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const id = sessionIdOf(c);
    const body = await jsonBody(c, finishSessionRequestSchema);
    return c.json(await finishProxySession(c, run, id, body));
  },
);
