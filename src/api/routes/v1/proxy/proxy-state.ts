import { proxySessionStateSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { sessionIdOf, usableSession } from "../../../proxy";
import { defineRoute, errors, jsonContent } from "../../define";
import { sessionParams } from "./proxy-params";

export const proxyState = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/proxy/{session}/state",
    "x-scope": "contributor",
    summary: "A proxy session's tracked sequences (tokens, masks, logprobs)",
    request: { params: sessionParams },
    responses: {
      200: { description: "The session.", content: jsonContent(proxySessionStateSchema) },
      ...errors({ 404: "No such session, or it expired (the message says when)." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const id = sessionIdOf(c);
    const session = await usableSession(c, run, id, { create: false, now: Date.now() });
    return c.json({
      run,
      session: id,
      status: session.status,
      created_at: session.createdAt,
      expires_at: session.expiresAt,
      group_id: session.groupId,
      nodes: session.tracking.nodes,
    });
  },
);
