import { z } from "zod";
import { runEventListSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { queryNumber } from "../../../request";
import { listRunEvents } from "../../../storage/guard";
import { defineRoute, jsonContent, runParams } from "../../define";

export const listEvents = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/events",
    "x-scope": "read",
    summary: "Run events (regressions and the guard's actions), newest first",
    request: {
      params: runParams,
      query: z.object({ limit: z.string().optional().describe("1-500, default 50.") }),
    },
    responses: {
      200: { description: "The events.", content: jsonContent(runEventListSchema) },
    },
  },
  async (c) => {
    const limit = Math.min(500, Math.max(1, Math.round(queryNumber(c, "limit") ?? 50)));
    return c.json({ events: await listRunEvents(c.env.DB, runOf(c), limit) });
  },
);
