import { atroposNodesSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { sessionIdOf, usableSession } from "../../../proxy";
import { defineRoute, errors, jsonContent } from "../../define";
import { sessionParams } from "./proxy-params";

export const atroposProxyNodes = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/atropos-proxy/{session}/nodes",
    "x-scope": "contributor",
    summary: "Atropos proxy wire: a session's tracked nodes",
    request: { params: sessionParams },
    responses: {
      200: { description: "The nodes.", content: jsonContent(atroposNodesSchema) },
      ...errors({ 404: "No such session, or it expired (the message says when)." }),
    },
  },
  async (c) => {
    const session = await usableSession(c, runOf(c), sessionIdOf(c), {
      create: false,
      now: Date.now(),
    });
    return c.json({ nodes: session.tracking.nodes });
  },
);
