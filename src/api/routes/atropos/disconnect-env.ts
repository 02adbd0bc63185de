import { z } from "zod";
import { envIdSchema } from "../../../core/wire/schemas";
import { coordinator, runOf } from "../../context";
import { unwrapRpc } from "../../errors";
import { jsonBody } from "../../request";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest } from "../define";

export const disconnectEnv = defineRoute(
  {
    method: "post",
    path: "/disconnect-env",
    "x-scope": "env",
    summary: "Mark an env disconnected",
    request: { body: jsonRequest(envIdSchema) },
    responses: {
      200: {
        description: "Disconnected.",
        content: jsonContent(z.object({ status: z.literal("success") })),
      },
      ...bodyErrors(),
      ...errors({ 404: "No env with this env_id in the run." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const { env_id } = await jsonBody(c, envIdSchema);
    return c.json(unwrapRpc(await coordinator(c, run).disconnectEnv(run, env_id)));
  },
);
