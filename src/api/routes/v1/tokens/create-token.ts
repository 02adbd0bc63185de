import { createdTokenSchema, createTokenRequestSchema } from "../../../../core/wire/tokens";
import { jsonBody } from "../../../request";
import { createToken } from "../../../storage/tokens";
import { bodyErrors, defineRoute, jsonContent, jsonRequest } from "../../define";

export const createTokenRoute = defineRoute(
  {
    method: "post",
    path: "/tokens",
    "x-scope": "admin",
    summary: "Create an API token",
    description:
      "Returns the secret once; only its SHA-256 is stored. Use it as `Authorization: Bearer <secret>` or as the HTTP Basic password.",
    request: { body: jsonRequest(createTokenRequestSchema) },
    responses: {
      200: { description: "The token and its secret.", content: jsonContent(createdTokenSchema) },
      ...bodyErrors(),
    },
  },
  async (c) => {
    const request = await jsonBody(c, createTokenRequestSchema);
    return c.json(await createToken(c.env.DB, request));
  },
);
