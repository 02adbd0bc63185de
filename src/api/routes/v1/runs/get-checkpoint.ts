import { z } from "zod";
import { checkpointSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { intParam, intPathParam } from "../../../request";
import { defineRoute, errors, jsonContent, runParams } from "../../define";
import { envSession } from "./save-checkpoint";

export const getCheckpoint = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/envs/{envId}/checkpoints/{step}",
    "x-scope": "env",
    summary: "Load the checkpoint at or before a step",
    request: {
      params: runParams.extend({
        envId: intPathParam,
        step: z.union([intPathParam, z.literal("latest")]).describe("A step, or `latest`."),
      }),
    },
    responses: {
      200: { description: "The checkpoint.", content: jsonContent(checkpointSchema) },
      ...errors({ 404: "No checkpoint at or before that step." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const envId = intParam(c, "envId");
    const stepParam = c.req.param("step");
    const step = stepParam === "latest" ? null : intParam(c, "step");
    const found = await envSession(c, run, envId).loadCheckpoint(step);
    if (!found) {
      throw new ApiError(
        "NOT_FOUND",
        step === null
          ? `env ${envId} has no checkpoint yet`
          : `env ${envId} has no checkpoint at or before step ${step}`,
      );
    }
    return c.json(found);
  },
);
