import { evalListSchema } from "../../../core/api-schemas";
import { runOf } from "../../context";
import { intParam, intPathParam } from "../../request";
import { defineRoute, jsonContent, runParams } from "../define";

export const listEvals = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/envs/{envId}/evals",
    "x-scope": "read",
    summary: "Evaluation results of an env over steps",
    request: { params: runParams.extend({ envId: intPathParam }) },
    responses: { 200: { description: "By step.", content: jsonContent(evalListSchema) } },
  },
  async (c) => {
    const run = runOf(c);
    const envId = intParam(c, "envId");
    const { results } = await c.env.DB.prepare(
      "SELECT step, metrics, created_at FROM evals WHERE run = ?1 AND env_id = ?2 ORDER BY step",
    )
      .bind(run, envId)
      .all<{ step: number; metrics: string; created_at: number }>();
    return c.json({ evals: results.map((r) => ({ ...r, metrics: JSON.parse(r.metrics) })) });
  },
);
