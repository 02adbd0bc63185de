import { runInferenceSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { getRunInferenceRedacted } from "../../../storage/inference";
import { defineRoute, jsonContent, runParams } from "../../define";

export const getInference = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/inference",
    "x-scope": "read",
    summary: "The run's inference servers, keys redacted",
    request: { params: runParams },
    responses: {
      200: {
        description: "The servers (an empty list when none are set).",
        content: jsonContent(runInferenceSchema),
      },
    },
  },
  async (c) => {
    const run = runOf(c);
    const stored = await getRunInferenceRedacted(c.env.DB, run);
    return c.json({ run, servers: stored?.servers ?? [], updated_at: stored?.updatedAt ?? null });
  },
);
