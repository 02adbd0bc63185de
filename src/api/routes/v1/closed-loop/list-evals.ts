import { evalListSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { intParam, intPathParam } from "../../../request";
import { evaluationsByStep } from "../../../storage/metrics";
import { defineRoute, jsonContent, runParams } from "../../define";

export const listEvals = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/envs/{envId}/evals",
    "x-scope": "read",
    summary: "Evaluation results of an env over steps",
    description: "A view of the metrics store's kind `eval` values, one record per step.",
    request: { params: runParams.extend({ envId: intPathParam }) },
    responses: { 200: { description: "By step.", content: jsonContent(evalListSchema) } },
  },
  async (c) => {
    const run = runOf(c);
    const envId = intParam(c, "envId");
    return c.json({ evals: await evaluationsByStep(c.env.DB, run, envId) });
  },
);
