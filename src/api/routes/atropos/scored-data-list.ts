import { z } from "zod";
import { scoredDataListSchema } from "../../../core/schemas";
import { sha256Hex } from "../../../core/sha256";
import { parseJson, readBody } from "../../body";
import { coordinator, keepAliveOf, runOf } from "../../context";
import {
  type BesideGroup,
  ingestGroups,
  ingestItemsOf,
  storeBeside,
  trajectoriesOfSubmission,
  validateGroupList,
} from "../../ingest";
import { requestMemoryCost, withMemory } from "../../memory-budget";
import { submitterOf } from "../../middleware/auth";
import { chargeBytes } from "../../middleware/quotas";
import { bodyLimits } from "../../request";
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
      "The body is documented by the ScoredData list schema; the handler reads it itself on the fast ingest path (src/api/ingest.ts validates with the same schema).",
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
    const { items, hash, beside } = await withMemory(
      c.env,
      requestMemoryCost(c.req.raw),
      async () => {
        const body = await readBody(c.req.raw, bodyLimits(c));
        await chargeBytes(c, body.raw.byteLength);
        const hash = sha256Hex(body.bytes);
        const json = parseJson(body.bytes);
        const groups = validateGroupList(json);
        const beside: BesideGroup[] = groups.map((group, i) => ({
          trajectories: trajectoriesOfSubmission((json as unknown[])[i], group.tokens.length),
          tokenTexts: group.token_texts ?? null,
        }));
        const items = await ingestItemsOf(groups, hash, key, submitterOf(c));
        return { items, hash, beside };
      },
    );
    return idempotent(c, run, "scored_data_list", hash, key, async () => {
      const outcomes = items.length
        ? await ingestGroups(c.env, run, items, c.get("timings"), keepAliveOf(c))
        : [];
      for (const [i, outcome] of outcomes.entries()) {
        if (!outcome.duplicate) await storeBeside(c.env, run, outcome.groupId, beside[i]!);
      }
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
