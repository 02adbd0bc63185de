import { replayStatusSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { replayStatus } from "../../../storage/replay";
import { getRun } from "../../../storage/runs";
import { defineRoute, errors, jsonContent, runParams } from "../../define";

export const getReplay = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/replay",
    "x-scope": "read",
    summary: "The run's replay buffer: settings and contents",
    request: { params: runParams },
    responses: {
      200: {
        description: "Settings, groups buffered, replays left and sequences replayed so far.",
        content: jsonContent(replayStatusSchema),
      },
      ...errors({ 404: "No such run." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const row = await getRun(c.env.DB, run);
    if (!row) throw new ApiError("NOT_FOUND", `run '${run}' does not exist; register a trainer`);
    return c.json(await replayStatus(c.env.DB, row));
  },
);
