import { z } from "zod";
import { tokenInfoSchema } from "../../../../core/wire/tokens";
import { ApiError } from "../../../errors";
import { revokeToken } from "../../../storage/tokens";
import { defineRoute, errors, jsonContent } from "../../define";

export const revokeTokenRoute = defineRoute(
  {
    method: "delete",
    path: "/tokens/{id}",
    "x-scope": "admin",
    summary: "Revoke an API token",
    description: "Takes effect on the next request; revoking a revoked token changes nothing.",
    request: { params: z.object({ id: z.string().describe("The token's id (tok_…).") }) },
    responses: {
      200: { description: "The revoked token.", content: jsonContent(tokenInfoSchema) },
      ...errors({ 404: "No token with this id." }),
    },
  },
  async (c) => {
    const id = c.req.param("id") ?? "";
    const token = await revokeToken(c.env.DB, id);
    if (!token) throw new ApiError("NOT_FOUND", `no token with id '${id}'; see GET /v1/tokens`);
    return c.json(token);
  },
);
