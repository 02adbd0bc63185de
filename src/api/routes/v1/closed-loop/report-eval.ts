import { z } from "zod";
import { evalReportSchema } from "../../../../core/wire/schemas";
import { keepAliveOf, runOf } from "../../../context";
import { guardEvaluation } from "../../../regression-guard";
import { intParam, intPathParam, jsonBody } from "../../../request";
import { recordMetrics } from "../../../storage/metrics";
import { bodyErrors, defineRoute, jsonContent, jsonRequest, runParams } from "../../define";

export const reportEval = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/envs/{envId}/evals",
    "x-scope": "env",
    summary: "Report evaluation metrics for a step",
    description:
      "Stored in the metrics store as kind `eval` (GET /v1/runs/{run}/metrics?kind=eval); a value reported again for the same step replaces it. The run's regression guard checks it: first values become baselines; a value below factor × baseline runs the guard's action and is recorded as a run event.",
    request: {
      params: runParams.extend({ envId: intPathParam }),
      body: jsonRequest(evalReportSchema),
    },
    responses: {
      200: {
        description: "Stored.",
        content: jsonContent(
          z.object({
            status: z.literal("stored"),
            step: z.number().int(),
            regression: z
              .boolean()
              .describe("The guard found a regression (GET /v1/runs/{run}/events)."),
          }),
        ),
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
    const event = await guardEvaluation(
      c.env,
      run,
      envId,
      body.step,
      keepAliveOf(c) ?? ((work) => void work.catch(() => {})),
    );
    return c.json({ status: "stored", step: body.step, regression: event !== null });
  },
);
