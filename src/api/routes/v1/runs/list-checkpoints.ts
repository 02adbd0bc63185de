import { z } from "zod";
import { runOf } from "../../../context";
import { intParam, intPathParam } from "../../../request";
import { defineRoute, jsonContent, runParams } from "../../define";
import { envSession } from "./save-checkpoint";

export const listCheckpoints = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/envs/{envId}/checkpoints",
    "x-scope": "env",
    summary: "List an env's checkpoints, newest first",
    request: { params: runParams.extend({ envId: intPathParam }) },
    responses: {
      200: {
        description: "Steps and when they were saved.",
        content: jsonContent(
          z.object({
            checkpoints: z.array(z.object({ step: z.number().int(), saved_at: z.number() })),
          }),
        ),
      },
    },
  },
  async (c) => {
    const run = runOf(c);
    return c.json({
      checkpoints: await envSession(c, run, intParam(c, "envId")).listCheckpoints(),
    });
  },
);
