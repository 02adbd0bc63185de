import { infoResponseSchema } from "../../../core/wire/api-schemas";
import { runOf } from "../../context";
import { getRun } from "../../storage/runs";
import { defineRoute, jsonContent } from "../define";

export const info = defineRoute(
  {
    method: "get",
    path: "/info",
    "x-scope": "trainer",
    summary: "batch_size and max_token_len",
    description: "Both are -1 before a trainer has registered.",
    responses: {
      200: {
        description: "The trainer's batch size and token limit.",
        content: jsonContent(infoResponseSchema),
      },
    },
  },
  async (c) => {
    const runRow = await getRun(c.env.DB, runOf(c));
    if (!runRow?.registered) return c.json({ batch_size: -1, max_token_len: -1 });
    return c.json({ batch_size: runRow.batchSize, max_token_len: runRow.maxTokenLen });
  },
);
