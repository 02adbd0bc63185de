import { z } from "zod";
import { metricKindSchema, metricsResponseSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { numberQuery, queryNumber } from "../../../request";
import { queryMetrics } from "../../../storage/metrics";
import { defineRoute, jsonContent, runParams } from "../../define";

const MAX_VALUES = 50_000;

export const getMetrics = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/metrics",
    "x-scope": "read",
    summary: "Metrics over steps",
    description:
      "Per-step batch statistics (kind train), env-reported values (env) and evaluation results (eval), one series per name, env and kind.",
    request: {
      params: runParams,
      query: z.object({
        name: z
          .string()
          .optional()
          .describe(
            "Comma-separated names; a name ending in `*` is a prefix (`eval/*`). Default: all.",
          ),
        env: numberQuery.describe("Only this env id (-1: run-wide values)."),
        kind: metricKindSchema.optional(),
        from_step: numberQuery.describe("First step (inclusive)."),
        to_step: numberQuery.describe("Last step (inclusive)."),
        limit: numberQuery.describe(
          `Most values returned, 1 to ${MAX_VALUES} (default ${MAX_VALUES}).`,
        ),
      }),
    },
    responses: {
      200: { description: "The matching series.", content: jsonContent(metricsResponseSchema) },
    },
  },
  async (c) => {
    const run = runOf(c);
    const kind = c.req.query("kind");
    const parsedKind =
      kind === undefined || kind === "" ? undefined : metricKindSchema.safeParse(kind);
    if (parsedKind && !parsedKind.success) {
      throw new ApiError("BAD_REQUEST", "query parameter 'kind' must be train, env or eval");
    }
    const names = (c.req.query("name") ?? "")
      .split(",")
      .map((n) => n.trim())
      .filter((n) => n !== "");
    const limit = Math.min(
      MAX_VALUES,
      Math.max(1, Math.round(queryNumber(c, "limit") ?? MAX_VALUES)),
    );
    return c.json(
      await queryMetrics(c.env.DB, run, {
        names,
        envId: queryNumber(c, "env"),
        kind: parsedKind?.data,
        fromStep: queryNumber(c, "from_step"),
        toStep: queryNumber(c, "to_step"),
        limit,
      }),
    );
  },
);
