import { policyResponseSchema } from "../../../../core/wire/api-schemas";
import { policyRequestSchema } from "../../../../core/wire/schemas";
import { coordinator, runOf } from "../../../context";
import { unwrapRpc } from "../../../errors";
import { jsonBody } from "../../../request";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest, runParams } from "../../define";

export const setPolicy = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/policy",
    "x-scope": "trainer",
    summary: "Announce the trainer's policy version",
    request: { params: runParams, body: jsonRequest(policyRequestSchema) },
    responses: {
      200: { description: "The run's policy version.", content: jsonContent(policyResponseSchema) },
      ...bodyErrors(),
      ...errors({ 409: 'A version lower than the current one without `"reset": true`.' }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const { version, reset } = await jsonBody(c, policyRequestSchema);
    return c.json(unwrapRpc(await coordinator(c, run).setPolicyVersion(run, version, reset)));
  },
);
