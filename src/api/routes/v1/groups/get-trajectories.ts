import { groupTrajectoriesSchema } from "../../../../core/wire/trajectory";
import { runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { intParam, intPathParam } from "../../../request";
import { groupExists } from "../../../storage/group-reads";
import { groupTrajectories } from "../../../storage/trajectories";
import { defineRoute, errors, jsonContent, runParams } from "../../define";

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
      ...errors({ 404: "No such group in the run (as GET …/groups/{id})." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const id = intParam(c, "id");
    // Another run's group id is "not found" here too, not an empty list.
    if (!(await groupExists(c.env.DB, run, id)))
      throw new ApiError("NOT_FOUND", `group ${id} does not exist in run '${run}'`);
    return c.json({
      run,
      group_id: id,
      trajectories: await groupTrajectories(c.env.DB, run, id),
    });
  },
);
