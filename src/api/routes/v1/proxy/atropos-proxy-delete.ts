import { atroposSessionDeletedSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { ownedSession, sessionIdOf } from "../../../proxy";
import { deleteSession } from "../../../storage/proxy-sessions";
import { defineRoute, errors, jsonContent } from "../../define";
import { sessionParams } from "./proxy-params";

export const atroposProxyDelete = defineRoute(
  {
    method: "delete",
    path: "/runs/{run}/atropos-proxy/{session}",
    "x-scope": "contributor",
    summary: "Atropos proxy wire: delete a session",
    description: "Its tracked sequences are dropped; a group it was finished into stays.",
    request: { params: sessionParams },
    responses: {
      200: { description: "Deleted.", content: jsonContent(atroposSessionDeletedSchema) },
      ...errors({ 404: "No such session (or it belongs to another token)." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const uuid = sessionIdOf(c);
    await ownedSession(c, run, uuid);
    if (!(await deleteSession(c.env.DB, run, uuid))) {
      throw new ApiError("NOT_FOUND", `no inference-proxy session '${uuid}' in run '${run}'`);
    }
    return c.json({ status: "deleted" as const, uuid });
  },
);
