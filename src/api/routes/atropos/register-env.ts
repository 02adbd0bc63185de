import { registerEnvResponseSchema } from "../../../core/wire/api-schemas";
import { registerEnvSchema } from "../../../core/wire/schemas";
import { coordinator, runOf } from "../../context";
import { jsonBody } from "../../request";
import { bodyErrors, defineRoute, jsonContent, jsonRequest } from "../define";

export const registerEnv = defineRoute(
  {
    method: "post",
    path: "/register-env",
    "x-scope": "env",
    summary: "Register an environment",
    description:
      "The same `env_key` (or a stale env of the same name) resumes its env_id. Before a trainer has registered the answer is `{status: 'wait for trainer to start'}`.",
    request: { body: jsonRequest(registerEnvSchema) },
    responses: {
      200: {
        description: "The env's registration, or the wait status.",
        content: jsonContent(registerEnvResponseSchema),
      },
      ...bodyErrors(),
    },
  },
  async (c) => {
    const run = runOf(c);
    const body = await jsonBody(c, registerEnvSchema);
    return c.json(await coordinator(c, run).registerEnv(run, body));
  },
);
