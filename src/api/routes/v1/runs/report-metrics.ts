import {
  metricsReportResponseSchema,
  metricsReportSchema,
} from "../../../../core/wire/api-schemas";
import { keepAliveOf, runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { guardEvaluation } from "../../../regression-guard";
import { intParam, intPathParam, jsonBody } from "../../../request";
import { recordMetrics } from "../../../storage/metrics";
import { getEnv } from "../../../storage/runs";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest, runParams } from "../../define";

export const reportMetrics = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/envs/{envId}/metrics",
    "x-scope": "env",
    summary: "Report an env's metrics or evaluation results for a step",
    description:
      "Values an env recorded (observe()/metrics(), drop counts, curriculum level) or evaluation results. A value reported again for the same name, step and kind replaces the first.",
    request: {
      params: runParams.extend({ envId: intPathParam }),
      body: jsonRequest(metricsReportSchema),
    },
    responses: {
      200: { description: "Stored.", content: jsonContent(metricsReportResponseSchema) },
      ...bodyErrors(),
      ...errors({ 404: "No env with this id is registered in the run." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const envId = intParam(c, "envId");
    const body = await jsonBody(c, metricsReportSchema);
    if (!(await getEnv(c.env.DB, run, envId))) {
      throw new ApiError(
        "NOT_FOUND",
        `env ${envId} is not registered in run '${run}': report with the env_id /register-env returned`,
      );
    }
    const stored = await recordMetrics(c.env.DB, {
      run,
      envId,
      step: body.step,
      kind: body.kind,
      policyVersion: body.policy_version,
      values: body.metrics,
    });
    // The run's regression guard checks evaluations sent here too (Node envs report them so).
    if (body.kind === "eval") {
      await guardEvaluation(
        c.env,
        run,
        envId,
        body.step,
        keepAliveOf(c) ?? ((work) => void work.catch(() => {})),
      );
    }
    return c.json({ status: "stored" as const, step: body.step, stored });
  },
);
