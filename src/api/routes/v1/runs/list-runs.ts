import { z } from "zod";
import { runSummarySchema } from "../../../../core/wire/api-schemas";
import { listRunSummaries } from "../../../storage/runs";
import { defineRoute, jsonContent } from "../../define";

export const listRuns = defineRoute(
  {
    method: "get",
    path: "/runs",
    "x-scope": "read",
    summary: "List runs",
    responses: {
      200: {
        description: "Every run, oldest first.",
        content: jsonContent(z.object({ runs: z.array(runSummarySchema) })),
      },
    },
  },
  async (c) => {
    const rows = await listRunSummaries(c.env.DB);
    return c.json({
      runs: rows.map((r) => ({
        name: r.name,
        step: r.step,
        policy_version: r.policyVersion,
        batch_size: r.batchSize,
        registered: r.registered,
        created_at: r.createdAt,
      })),
    });
  },
);
