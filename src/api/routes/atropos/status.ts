import { z } from "zod";
import { runOf } from "../../context";
import { getRun, queueCounts } from "../../storage/runs";
import { defineRoute, jsonContent } from "../define";

export const status = defineRoute(
  {
    method: "get",
    path: "/status",
    "x-scope": "read",
    summary: "Current step and queue size",
    responses: {
      200: {
        description: "`queue_size` counts queued groups.",
        content: jsonContent(
          z.object({ current_step: z.number().int(), queue_size: z.number().int() }),
        ),
      },
    },
  },
  async (c) => {
    const run = runOf(c);
    const [runRow, counts] = await Promise.all([getRun(c.env.DB, run), queueCounts(c.env.DB, run)]);
    const queued = counts.filter((r) => r.status === "queued").reduce((s, r) => s + r.n, 0);
    return c.json({ current_step: runRow?.step ?? 0, queue_size: queued });
  },
);
