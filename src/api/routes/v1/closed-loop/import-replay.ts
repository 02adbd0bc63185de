import { z } from "zod";
import { scoredDataListSchema } from "../../../../core/wire/schemas";
import { keepAliveOf, runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { readGroupList } from "../../../group-list";
import { ingestGroups } from "../../../ingest";
import { validIdempotencyKey } from "../../../storage/idempotency";
import { adoptIntoReplay } from "../../../storage/replay";
import { getRun } from "../../../storage/runs";
import { idempotencyKeyHeader, idempotent } from "../../atropos/idempotent";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest, runParams } from "../../define";

export const importReplay = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/replay/groups",
    "x-scope": "trainer",
    summary: "Load scored groups straight into the replay buffer (offline data)",
    description:
      "The body is a list of groups, as for /scored_data_list. They are stored, never delivered as online data, and kept in the replay buffer with priority = mean score (up to its capacity). `atropos-edge import --into replay` sends files in chunks with an Idempotency-Key per chunk.",
    request: {
      params: runParams,
      body: jsonRequest(scoredDataListSchema),
      headers: idempotencyKeyHeader,
    },
    responses: {
      200: {
        description: "Groups stored, kept in the buffer, and duplicates of an earlier copy.",
        content: jsonContent(
          z.object({
            status: z.literal("received"),
            groups_processed: z.number().int(),
            kept_for_replay: z.number().int(),
            duplicates: z.number().int(),
          }),
        ),
      },
      ...bodyErrors(),
      ...errors({ 404: "No such run (register a trainer first)." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const key = validIdempotencyKey(c.req.header("idempotency-key"));
    if (!(await getRun(c.env.DB, run))) {
      throw new ApiError("NOT_FOUND", `run '${run}' does not exist; register a trainer first`);
    }
    // Offline groups belong to no registered env here (env_id would buffer partial groups), and
    // are stored as delivered, so no lease can take one before it joins the buffer.
    const { items, hash } = await readGroupList(c, { key, offline: true });
    return idempotent(c, run, "replay_import", hash, key, async () => {
      const outcomes = items.length
        ? await ingestGroups(c.env, run, items, c.get("timings"), keepAliveOf(c))
        : [];
      const stored = outcomes.filter((o) => !o.duplicate);
      // Duplicates too: a retry after a failure between the insert and this finds its groups
      // stored but not yet in the buffer (adoption skips online groups and ones already there).
      const kept = await adoptIntoReplay(
        c.env.DB,
        run,
        outcomes.map((o) => o.groupId).filter((id) => id >= 0),
      );
      return {
        status: "received",
        groups_processed: stored.length,
        kept_for_replay: kept,
        duplicates: outcomes.length - stored.length,
      };
    });
  },
);
