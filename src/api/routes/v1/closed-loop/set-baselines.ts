import { guardStatusSchema, setBaselinesRequestSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { jsonBody } from "../../../request";
import { guardStatus, putBaselines } from "../../../storage/guard";
import { bodyErrors, defineRoute, jsonContent, jsonRequest, runParams } from "../../define";

export const setBaselinesRoute = defineRoute(
  {
    method: "put",
    path: "/runs/{run}/guard/baselines",
    "x-scope": "trainer",
    summary: "Set evaluation baselines (instead of the first evaluation's values)",
    request: { params: runParams, body: jsonRequest(setBaselinesRequestSchema) },
    responses: {
      200: {
        description: "The guard with all its baselines.",
        content: jsonContent(guardStatusSchema),
      },
      ...bodyErrors(),
    },
  },
  async (c) => {
    const run = runOf(c);
    const { baselines } = await jsonBody(c, setBaselinesRequestSchema);
    await putBaselines(c.env.DB, run, baselines, "api");
    return c.json(await guardStatus(c.env.DB, run));
  },
);
