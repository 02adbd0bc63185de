import { z } from "zod";
import { runSummarySchema } from "../../../core/api-schemas";
import { defineRoute, jsonContent } from "../define";

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
    const { results } = await c.env.DB.prepare(
      "SELECT name, step, policy_version, batch_size, registered, created_at FROM runs ORDER BY created_at",
    ).all<{
      name: string;
      step: number;
      policy_version: number;
      batch_size: number;
      registered: number;
      created_at: number;
    }>();
    return c.json({ runs: results.map((r) => ({ ...r, registered: r.registered === 1 })) });
  },
);
