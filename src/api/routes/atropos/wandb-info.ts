import { z } from "zod";
import { runOf } from "../../context";
import { getRun } from "../../storage/runs";
import { defineRoute, jsonContent } from "../define";

export const wandbInfo = defineRoute(
  {
    method: "get",
    path: "/wandb_info",
    "x-scope": "env",
    summary: "W&B group and project of the trainer",
    description: "Environments read it to log under the trainer's W&B group.",
    responses: {
      200: {
        description: "null before a trainer has registered.",
        content: jsonContent(
          z.object({ group: z.string().nullable(), project: z.string().nullable() }),
        ),
      },
    },
  },
  async (c) => {
    const runRow = await getRun(c.env.DB, runOf(c));
    return c.json({ group: runRow?.wandbGroup ?? null, project: runRow?.wandbProject ?? null });
  },
);
