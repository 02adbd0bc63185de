import { tokenListSchema } from "../../../../core/wire/tokens";
import { listTokens } from "../../../storage/tokens";
import { defineRoute, jsonContent } from "../../define";

export const listTokensRoute = defineRoute(
  {
    method: "get",
    path: "/tokens",
    "x-scope": "admin",
    summary: "List API tokens",
    description: "Revoked tokens included; never a secret or its hash.",
    responses: {
      200: { description: "Every token, oldest first.", content: jsonContent(tokenListSchema) },
    },
  },
  async (c) => c.json({ tokens: await listTokens(c.env.DB) }),
);
