import { policyResponseSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { getRun } from "../../../storage/runs";
import { defineRoute, jsonContent, runParams } from "../../define";

export const getPolicy = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/policy",
    "x-scope": "trainer",
    summary: "Current policy version",
    request: { params: runParams },
    responses: {
      200: {
        description: "0 before any announcement.",
        content: jsonContent(policyResponseSchema),
      },
    },
  },
  async (c) => {
    const runRow = await getRun(c.env.DB, runOf(c));
    return c.json({ policy_version: runRow?.policyVersion ?? 0 });
  },
);
