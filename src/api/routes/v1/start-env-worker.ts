import { z } from "zod";
import { envWorkerSchema } from "../../../core/api-schemas";
import { APIServerConfigSchema } from "../../../core/server-config";
import { type AppContext, runOf } from "../../context";
import { ApiError } from "../../errors";
import { jsonBody } from "../../request";
import { bodyErrors, defineRoute, jsonContent, jsonRequest, runParams } from "../define";

export function envFeeder(c: AppContext, name: string) {
  return c.env.ENV_FEEDER.get(c.env.ENV_FEEDER.idFromName(name));
}

export const envWorkerRequestSchema = z.object({
  env: z.string().min(1),
  instance: z
    .string()
    .regex(/^[\w.-]{1,64}$/)
    .default("0"),
  config: z.record(z.string(), z.unknown()).default({}),
  inference: z.array(APIServerConfigSchema).min(1, "give at least one inference server"),
});

export const startEnvWorker = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/env-workers",
    "x-scope": "admin",
    summary: "Start (or reconfigure) an env worker",
    description:
      "The env must be one the Worker registers, and its config must pass the env's schema.",
    request: { params: runParams, body: jsonRequest(envWorkerRequestSchema) },
    responses: {
      200: { description: "The env worker.", content: jsonContent(envWorkerSchema) },
      ...bodyErrors("The body fails the schema, the env is unknown, or its config is invalid."),
    },
  },
  async (c) => {
    const run = runOf(c);
    const body = await jsonBody(c, envWorkerRequestSchema);
    const name = `${run}/${body.env}/${body.instance}`;
    try {
      const state = await envFeeder(c, name).start(run, name, {
        envName: body.env,
        config: body.config,
        inference: body.inference,
      });
      return c.json(state);
    } catch (error) {
      // The feeder checks the env against the envs this Worker registers, then its config,
      // before it stores anything.
      const message = error instanceof Error ? error.message : String(error);
      if (message.startsWith("unknown env")) {
        throw new ApiError("VALIDATION_FAILED", message, [
          { type: "value_error", loc: ["body", "env"], msg: "unknown env" },
        ]);
      }
      if (message.startsWith("invalid env config")) {
        throw new ApiError("VALIDATION_FAILED", message, [
          { type: "value_error", loc: ["body", "config"], msg: "invalid env config" },
        ]);
      }
      throw error;
    }
  },
);
