import { deliveredGroupSchema } from "../../../core/api-schemas";
import { runOf } from "../../context";
import { canonicalPayload } from "../../delivery";
import { rawJson } from "../../request";
import {
  GROUP_PAYLOAD_JOIN,
  GROUP_REF_COLUMNS,
  type GroupRefRow,
  groupRef,
} from "../../storage/payloads";
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
    const row = await c.env.DB.prepare(
      `SELECT ${GROUP_REF_COLUMNS} FROM groups g ${GROUP_PAYLOAD_JOIN}
       WHERE g.run = ?1 AND g.status <> 'buffered' ORDER BY COALESCE(g.queued_at, g.created_at) DESC, g.id DESC LIMIT 1`,
    )
      .bind(run)
      .first<GroupRefRow>();
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
