import { runInferenceRequestSchema, runInferenceSchema } from "../../../../core/wire/api-schemas";
import { parseServerConfig } from "../../../../core/wire/server-config";
import { runOf } from "../../../context";
import { jsonBody } from "../../../request";
import { putRunInference } from "../../../storage/inference";
import { bodyErrors, defineRoute, jsonContent, jsonRequest, runParams } from "../../define";

export const putInference = defineRoute(
  {
    method: "put",
    path: "/runs/{run}/inference",
    "x-scope": "admin",
    summary: "Set the run's inference servers (used by the inference proxy)",
    description:
      "Replaces the list. API keys are stored (encrypted when the Worker has INFERENCE_KEYS_SECRET) and never returned.",
    request: { params: runParams, body: jsonRequest(runInferenceRequestSchema) },
    responses: {
      200: {
        description: "The servers as stored, keys redacted.",
        content: jsonContent(runInferenceSchema),
      },
      ...bodyErrors(),
    },
  },
  async (c) => {
    const run = runOf(c);
    const servers = (await jsonBody(c, runInferenceRequestSchema)).map(parseServerConfig);
    const now = Date.now();
    const shown = await putRunInference(c.env.DB, run, servers, c.env.INFERENCE_KEYS_SECRET, now);
    return c.json({ run, servers: shown, updated_at: now });
  },
);
