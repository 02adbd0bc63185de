import { z } from "zod";
import { parseJson, readBody } from "../../../body";
import { type AppContext, runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { bodyLimits, intParam, intPathParam } from "../../../request";
import { getEnv } from "../../../storage/runs";
import { bodyErrors, defineRoute, errors, jsonContent, runParams } from "../../define";

export function envSession(c: AppContext, run: string, envId: number) {
  return c.env.ENV_SESSION.get(c.env.ENV_SESSION.idFromName(`${run}/${envId}`));
}

const MAX_CHECKPOINT_BYTES = 1024 * 1024;

export const saveCheckpoint = defineRoute(
  {
    method: "put",
    path: "/runs/{run}/envs/{envId}/checkpoints/{step}",
    "x-scope": "env",
    summary: "Save an env's checkpoint state",
    description: "Any JSON object up to 1 MiB (gzip bodies accepted).",
    request: {
      params: runParams.extend({ envId: intPathParam, step: intPathParam }),
      body: {
        required: true,
        content: jsonContent(z.record(z.string(), z.unknown())),
      },
    },
    responses: {
      200: {
        description: "Saved.",
        content: jsonContent(
          z.object({ status: z.literal("saved"), step: z.number().int(), saved_at: z.number() }),
        ),
      },
      ...bodyErrors("The body is not a JSON object."),
      ...errors({ 404: "No env with this env_id in the run." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const envId = intParam(c, "envId");
    const step = intParam(c, "step");
    const { bytes } = await readBody(c.req.raw, {
      maxBodyBytes: MAX_CHECKPOINT_BYTES,
      maxInflatedBytes: MAX_CHECKPOINT_BYTES,
      idleTimeoutMs: bodyLimits(c).idleTimeoutMs,
      bodySetting: "the 1 MiB checkpoint limit",
      inflatedSetting: "the 1 MiB checkpoint limit",
    });
    const state = parseJson(bytes);
    if (state === null || typeof state !== "object") {
      throw new ApiError("VALIDATION_FAILED", "checkpoint state must be a JSON object", [
        { type: "dict_type", loc: ["body"], msg: "Input should be a valid dictionary" },
      ]);
    }
    if (!(await getEnv(c.env.DB, run, envId)))
      throw new ApiError("NOT_FOUND", `env_id ${envId} is not registered in run '${run}'`);
    const saved = await envSession(c, run, envId).saveCheckpoint(step, JSON.stringify(state));
    return c.json({ status: "saved", step: saved.step, saved_at: saved.saved_at });
  },
);
