import { z } from "zod";
import { evalReportSchema } from "../../../core/schemas";
import { runOf } from "../../context";
import { intParam, intPathParam, jsonBody } from "../../request";
import { recordMetrics } from "../../storage/metrics";
import { bodyErrors, defineRoute, jsonContent, jsonRequest, runParams } from "../define";

export const reportEval = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/envs/{envId}/evals",
    "x-scope": "env",
    summary: "Report evaluation metrics for a step",
    description:
      "Stored in the metrics store as kind `eval` (GET /v1/runs/{run}/metrics?kind=eval); a value reported again for the same step replaces the first.",
    request: {
      params: runParams.extend({ envId: intPathParam }),
      body: jsonRequest(evalReportSchema),
    },
    responses: {
      200: {
        description: "Stored.",
        content: jsonContent(z.object({ status: z.literal("stored"), step: z.number().int() })),
      },
      ...bodyErrors(),
    },
  },
  async (c) => {
    const run = runOf(c);
    const envId = intParam(c, "envId");
    const body = await jsonBody(c, evalReportSchema);
    await recordMetrics(c.env.DB, {
      run,
      envId,
      step: body.step,
      kind: "eval",
      values: body.metrics,
    });
    return c.json({ status: "stored", step: body.step });
  },
);
