import { deliveredGroupSchema } from "../../../core/wire/api-schemas";
import { runOf } from "../../context";
import { canonicalPayload } from "../../delivery";
import { rawJson } from "../../request";
import { latestQueuedGroupRef } from "../../storage/group-reads";
import { groupRef } from "../../storage/payloads";
import { defineRoute, jsonContent } from "../define";

export const latestExample = defineRoute(
  {
    method: "get",
    path: "/latest_example",
    "x-scope": "read",
    summary: "The most recently queued group",
    description: "Empty lists for every key while the run has no queued group.",
    responses: {
      200: { description: "A group.", content: jsonContent(deliveredGroupSchema) },
    },
  },
  async (c) => {
    const run = runOf(c);
    const row = await latestQueuedGroupRef(c.env.DB, run);
    if (!row) {
      return c.json({
        tokens: [],
        masks: [],
        scores: [],
        advantages: [],
        ref_logprobs: [],
        generation_params: [],
        inference_logprobs: [],
        messages: [],
        images: [],
      });
    }
    return rawJson(await canonicalPayload(c.env, groupRef(row)));
  },
);
