import { z } from "zod";
import { errorMessage } from "../../../../core/errors";
import { envWorkerSchema } from "../../../../core/wire/api-schemas";
import { APIServerConfigSchema } from "../../../../core/wire/server-config";
import { type AppContext, runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { jsonBody } from "../../../request";
import { getRunInferenceRedacted } from "../../../storage/inference";
import { bodyErrors, defineRoute, jsonContent, jsonRequest, runParams } from "../../define";

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
  inference: z
    .union([
      z.literal("run"),
      z.array(APIServerConfigSchema).min(1, "give at least one inference server"),
    ])
    .default("run")
    .describe(
      '"run" (the default): the run\'s stored servers (PUT /v1/runs/{run}/inference; their keys stay sealed in D1). Or a list of servers without api_key: a key here would travel in every queue message.',
    ),
});

/** 422 for servers that would put a key into queue messages, or a run with none stored. */
async function inferenceProblem(
  c: AppContext,
  run: string,
  inference: z.output<typeof envWorkerRequestSchema>["inference"],
): Promise<ApiError | null> {
  if (inference === "run") {
    if (await getRunInferenceRedacted(c.env.DB, run)) return null;
    const msg = `run '${run}' has no stored inference servers: PUT them to /v1/runs/${run}/inference (or \`atropos-edge inference set\`) first, or list servers without api_key here`;
    return new ApiError("VALIDATION_FAILED", msg, [
      { type: "value_error", loc: ["body", "inference"], msg },
    ]);
  }
  const keyed = inference.findIndex((server) => Boolean(server.api_key));
  if (keyed < 0) return null;
  const msg = `inference[${keyed}].api_key would travel in plaintext in every queue message: store the servers with PUT /v1/runs/${run}/inference (keys sealed with INFERENCE_KEYS_SECRET) and leave inference out (or set it to "run")`;
  return new ApiError("VALIDATION_FAILED", msg, [
    { type: "value_error", loc: ["body", "inference", keyed, "api_key"], msg },
  ]);
}

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
      ...bodyErrors(
        "The body fails the schema, the env is unknown, its config is invalid, a listed server has an api_key, or the run has no stored servers to use.",
      ),
    },
  },
  async (c) => {
    const run = runOf(c);
    const body = await jsonBody(c, envWorkerRequestSchema);
    const problem = await inferenceProblem(c, run, body.inference);
    if (problem) throw problem;
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
      const message = errorMessage(error);
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
