import { z } from "zod";
import { deliveredGroupSchema } from "../../../core/wire/api-schemas";
import { coordinator, runOf } from "../../context";
import { batchResponse, timedLease } from "../../delivery";
import { submitterOf } from "../../middleware/auth";
import { defineRoute, jsonContent } from "../define";

export const batch = defineRoute(
  {
    method: "get",
    path: "/batch",
    "x-scope": "trainer",
    summary: "Pull the next batch (Atropos)",
    description:
      "At-least-once: the next pull acknowledges this batch. `batch` is null when no batch can be formed (`X-Atropos-Edge-Reason` says why); before /register the answer is an error status with an empty batch, as in Atropos.",
    responses: {
      200: {
        description: "A batch (headers `x-batch-id`, `x-batch-step`), null, or not registered.",
        content: jsonContent(
          z.union([
            z.object({ batch: z.array(deliveredGroupSchema).nullable() }),
            z.object({
              status: z.literal("error"),
              message: z.string(),
              batch: z.array(z.unknown()).max(0),
            }),
          ]),
        ),
      },
    },
  },
  async (c) => {
    const run = runOf(c);
    const outcome = await timedLease(c, () => coordinator(c, run).compatBatch(run, submitterOf(c)));
    if (outcome.kind === "not_registered") {
      return c.json({
        status: "error",
        message: "Trainer not registered. Call /register first.",
        batch: [],
      });
    }
    if (outcome.kind === "none") {
      c.set("quietPoll", !outcome.acknowledged);
      c.header("X-Atropos-Edge-Reason", outcome.reason.replace(/[^\x20-\x7e]/g, "?"));
      return c.json({ batch: null });
    }
    return batchResponse(
      c.env,
      c.req.raw,
      outcome.groups,
      { prefix: '{"batch":[', suffix: "]}" },
      { "x-batch-id": outcome.batchId, "x-batch-step": String(outcome.step) },
    );
  },
);
