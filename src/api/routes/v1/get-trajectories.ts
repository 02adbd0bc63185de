import { groupTrajectoriesSchema } from "../../../core/trajectory";
import { runOf } from "../../context";
import { intParam, intPathParam } from "../../request";
import { groupTrajectories } from "../../storage/trajectories";
import { defineRoute, jsonContent, runParams } from "../define";

export const getTrajectories = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/groups/{id}/trajectories",
    "x-scope": "read",
    summary: "The trajectories stored beside a group (one per sequence that has one)",
    request: { params: runParams.extend({ id: intPathParam }) },
    responses: {
      200: {
        description: "The group's trajectories (an empty list when it has none).",
        content: jsonContent(groupTrajectoriesSchema),
      },
    },
  },
  async (c) => {
    const run = runOf(c);
    const id = intParam(c, "id");
    return c.json({
      run,
      group_id: id,
      trajectories: await groupTrajectories(c.env.DB, run, id),
    });
  },
);
