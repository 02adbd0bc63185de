import { z } from "zod";
import { scoredDataListSchema } from "../../../core/schemas";
import { sha256Hex } from "../../../core/sha256";
import { parseJson, readBody } from "../../body";
import { keepAliveOf, runOf } from "../../context";
import { ApiError } from "../../errors";
import { ingestGroups, ingestItemsOf, validateGroupList } from "../../ingest";
import { requestMemoryCost, withMemory } from "../../memory-budget";
import { submitterOf } from "../../middleware/auth";
import { chargeBytes } from "../../middleware/quotas";
import { bodyLimits } from "../../request";
import { validIdempotencyKey } from "../../storage/idempotency";
import { adoptIntoReplay } from "../../storage/replay";
import { getRun } from "../../storage/runs";
import { idempotencyKeyHeader, idempotent } from "../atropos/idempotent";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest, runParams } from "../define";

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
    const { items, hash } = await withMemory(c.env, requestMemoryCost(c.req.raw), async () => {
      const body = await readBody(c.req.raw, bodyLimits(c));
      await chargeBytes(c, body.raw.byteLength);
      const hash = sha256Hex(body.bytes);
      // Offline groups belong to no registered env here: env_id would buffer partial groups.
      const groups = validateGroupList(parseJson(body.bytes)).map((g) => ({ ...g, env_id: null }));
      const items = await ingestItemsOf(groups, hash, key, submitterOf(c));
      return { items, hash };
    });
    return idempotent(c, run, "replay_import", hash, key, async () => {
      const outcomes = items.length
        ? await ingestGroups(c.env, run, items, c.get("timings"), keepAliveOf(c))
        : [];
      const stored = outcomes.filter((o) => !o.duplicate);
      const kept = await adoptIntoReplay(
        c.env.DB,
        run,
        stored.map((o) => o.groupId),
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
