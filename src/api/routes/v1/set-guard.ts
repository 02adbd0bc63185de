import { guardConfigRequestSchema, guardConfigSchema } from "../../../core/api-schemas";
import { runOf } from "../../context";
import { jsonBody } from "../../request";
import { setGuard } from "../../storage/guard";
import { bodyErrors, defineRoute, jsonContent, jsonRequest, runParams } from "../define";

export const setGuardRoute = defineRoute(
  {
    method: "put",
    path: "/runs/{run}/guard",
    "x-scope": "trainer",
    summary: "Configure the regression guard",
    description:
      "Fields left out keep their values. action: alert | raise_replay {fraction} | set_weights {weights: {env_id: weight}} | pause_env {env_id}.",
    request: { params: runParams, body: jsonRequest(guardConfigRequestSchema) },
    responses: {
      200: { description: "The settings now.", content: jsonContent(guardConfigSchema) },
      ...bodyErrors(),
    },
  },
  async (c) => {
    const run = runOf(c);
    const change = await jsonBody(c, guardConfigRequestSchema);
    return c.json(await setGuard(c.env.DB, run, change));
  },
);
