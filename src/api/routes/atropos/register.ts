import { registerResponseJson } from "../../../core/codecs/uuid128";
import { registerResponseSchema } from "../../../core/wire/api-schemas";
import { registrationSchema } from "../../../core/wire/schemas";
import { coordinator, runOf } from "../../context";
import { jsonBody, rawJson } from "../../request";
import { bodyErrors, defineRoute, jsonContent, jsonRequest } from "../define";

export const register = defineRoute(
  {
    method: "post",
    path: "/register",
    "x-scope": "trainer",
    summary: "Register the trainer",
    description:
      "Atropos' trainer registration. Re-registering resumes the run and hands an unacknowledged `/batch` out again.",
    request: { body: jsonRequest(registrationSchema) },
    responses: {
      200: {
        description: "`uuid` is a 128-bit integer written as a JSON number, as Atropos does.",
        content: jsonContent(registerResponseSchema),
      },
      ...bodyErrors(),
    },
  },
  async (c) => {
    const run = runOf(c);
    const reg = await jsonBody(c, registrationSchema);
    const { uuid } = await coordinator(c, run).register(run, reg);
    return rawJson(registerResponseJson(uuid));
  },
);
