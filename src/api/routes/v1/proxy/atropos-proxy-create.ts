import {
  atroposSessionCreatedSchema,
  atroposSessionCreateSchema,
} from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { createOwnedSession } from "../../../proxy";
import { jsonBody } from "../../../request";
import { bodyErrors, defineRoute, jsonContent, jsonRequest, runParams } from "../../define";

export const atroposProxyCreate = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/atropos-proxy/sessions/create",
    "x-scope": "contributor",
    summary: "Atropos proxy wire: create a session",
    description:
      "Atropos' managed_server_proxy `POST /sessions/create`. The session is the same as the OpenAI routes' (/v1/runs/{run}/proxy/{uuid}/…).",
    request: { params: runParams, body: jsonRequest(atroposSessionCreateSchema, false) },
    responses: {
      200: { description: "The new session.", content: jsonContent(atroposSessionCreatedSchema) },
      ...bodyErrors(),
    },
  },
  async (c) => {
    const run = runOf(c);
    await jsonBody(c, atroposSessionCreateSchema, { optional: true });
    const uuid = crypto.randomUUID();
    await createOwnedSession(c, run, uuid, Date.now());
    return c.json({ uuid, url: `/v1/runs/${run}/atropos-proxy/${uuid}/v1` });
  },
);
