import { z } from "zod";
import { scoredDataListSchema } from "../../../core/wire/schemas";
import { coordinator, keepAliveOf, runOf } from "../../context";
import { readGroupList } from "../../group-list";
import { ingestGroups } from "../../ingest";
import { validIdempotencyKey } from "../../storage/idempotency";
import { bodyErrors, defineRoute, jsonContent, jsonRequest } from "../define";
import { idempotencyKeyHeader, idempotent } from "./idempotent";

export const scoredDataList = defineRoute(
  {
    method: "post",
    path: "/scored_data_list",
    "x-scope": "contributor",
    summary: "Submit several scored groups, all or nothing",
    description:
      "The body is documented by the ScoredData list schema; the handler reads it itself, one group at a time (src/api/group-list.ts validates each with the same schema). A list of more than MAX_LIST_GROUPS groups (default 1024) is refused with 413.",
    request: { body: jsonRequest(scoredDataListSchema), headers: idempotencyKeyHeader },
    responses: {
      200: {
        description:
          "`groups_processed` counts the groups this request stored; `duplicates` the groups of an earlier copy of this body.",
        content: jsonContent(
          z.object({
            status: z.literal("received"),
            groups_processed: z.number().int(),
            buffered: z.number().int().optional(),
            last_buffer_size: z.number().int().optional(),
            duplicates: z.number().int().optional(),
          }),
        ),
      },
      ...bodyErrors(),
    },
  },
  async (c) => {
    const run = runOf(c);
    const key = validIdempotencyKey(c.req.header("idempotency-key"));
    const { items, hash } = await readGroupList(c, { key });
    return idempotent(c, run, "scored_data_list", hash, key, async () => {
      const outcomes = items.length
        ? await ingestGroups(c.env, run, items, c.get("timings"), keepAliveOf(c))
        : [];
      // The answer counts what this request stored; groups of an earlier copy are duplicates.
      const stored = outcomes.filter((o) => !o.duplicate);
      const duplicates = outcomes.length - stored.length;
      const bufferedEnvs = [
        ...new Set(stored.filter((o) => o.status === "buffered").map((o) => o.envId!)),
      ];
      let lastBufferSize = 0;
      for (const envId of bufferedEnvs) {
        lastBufferSize = (await coordinator(c, run).releaseBuffered(run, envId)).bufferedSequences;
      }
      const buffered = stored.filter((o) => o.status === "buffered").length;
      return {
        status: "received",
        groups_processed: stored.length,
        ...(buffered > 0 ? { buffered, last_buffer_size: lastBufferSize } : {}),
        ...(duplicates > 0 ? { duplicates } : {}),
      };
    });
  },
);
