import { guardStatusSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { guardStatus } from "../../../storage/guard";
import { defineRoute, jsonContent, runParams } from "../../define";

export const getGuardRoute = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/guard",
    "x-scope": "read",
    summary: "The run's regression guard: settings and baselines",
    request: { params: runParams },
    responses: {
      200: {
        description: "On by default: factor 0.95, alert only.",
        content: jsonContent(guardStatusSchema),
      },
    },
  },
  async (c) => c.json(await guardStatus(c.env.DB, runOf(c))),
);
