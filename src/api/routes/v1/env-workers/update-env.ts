import { envControlRequestSchema, envControlSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { intParam, intPathParam, jsonBody } from "../../../request";
import { updateEnvControl } from "../../../storage/env-control";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest, runParams } from "../../define";

export const updateEnv = defineRoute(
  {
    method: "patch",
    path: "/runs/{run}/envs/{envId}",
    "x-scope": "trainer",
    summary: "Change an env's weight, minimum batch allocation or paused state",
    description:
      "Effective on the next /status-env poll and env-worker tick, and for the next batch formed. A paused env reports a zero quota in /status-env, so self-throttling Python envs stop too.",
    request: {
      params: runParams.extend({ envId: intPathParam }),
      body: jsonRequest(envControlRequestSchema),
    },
    responses: {
      200: { description: "The env's settings now.", content: jsonContent(envControlSchema) },
      ...bodyErrors(),
      ...errors({ 404: "No env with this id in the run." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const envId = intParam(c, "envId");
    const change = await jsonBody(c, envControlRequestSchema);
    const updated = await updateEnvControl(c.env.DB, run, envId, change);
    if (!updated) {
      throw new ApiError("NOT_FOUND", `env_id ${envId} is not registered in run '${run}'`);
    }
    return c.json(updated);
  },
);
