import { z } from "zod";
import { scoredDataSchema } from "../../../core/schemas";
import { sha256Hex } from "../../../core/sha256";
import { parseJson, readBody } from "../../body";
import { coordinator, keepAliveOf, runOf } from "../../context";
import {
  canonicalPayloadOf,
  type IngestItem,
  ingestGroups,
  storeBeside,
  submissionDedupeKey,
  summarizeGroup,
  trajectoriesOfSubmission,
  validateGroup,
} from "../../ingest";
import { requestMemoryCost, withMemory } from "../../memory-budget";
import { submitterOf } from "../../middleware/auth";
import { chargeBytes } from "../../middleware/quotas";
import { bodyLimits } from "../../request";
import { validIdempotencyKey } from "../../storage/idempotency";
import { bodyErrors, defineRoute, jsonContent, jsonRequest } from "../define";
import { idempotencyKeyHeader, idempotent } from "./idempotent";

export const scoredDataResponseSchema = z.union([
  z.object({ status: z.literal("received") }),
  z.object({ status: z.literal("received"), duplicate: z.literal(true) }),
  z.object({ status: z.literal("buffered"), buffer_size: z.number().int() }),
]);

export const scoredData = defineRoute(
  {
    method: "post",
    path: "/scored_data",
    "x-scope": "contributor",
    summary: "Submit one scored group",
    description:
      "The body is documented by the ScoredData schema; the handler reads it itself on the fast ingest path (streamed read, gzip, numeric-matrix checks with the same schema, src/api/ingest.ts). A retry of a stored body answers `duplicate: true`; a group of an env below its min batch allocation is buffered.",
    request: { body: jsonRequest(scoredDataSchema), headers: idempotencyKeyHeader },
    responses: {
      200: { description: "Stored (or buffered).", content: jsonContent(scoredDataResponseSchema) },
      ...bodyErrors(),
    },
  },
  // Reading, inflating, parsing and validating a body is what holds a whole group in memory, so
  // it runs under the isolate's memory budget; the commit that follows (waiting on R2 and D1)
  // holds only the stored bytes and a summary, so other bodies can be parsed meanwhile.
  async (c) => {
    const run = runOf(c);
    const timings = c.get("timings");
    const key = validIdempotencyKey(c.req.header("idempotency-key"));
    const { item, hash, beside } = await withMemory(
      c.env,
      requestMemoryCost(c.req.raw),
      async () => {
        const body = await timings.measure("read", () => readBody(c.req.raw, bodyLimits(c)));
        await chargeBytes(c, body.raw.byteLength);
        const hash = await timings.measure("hash", () => sha256Hex(body.bytes));
        const json = await timings.measure("parse", () => parseJson(body.bytes));
        const group = await timings.measure("validate", () => validateGroup(json));
        const trajectories = trajectoriesOfSubmission(json, group.tokens.length);
        const stored = await timings.measure("canonical", () => canonicalPayloadOf(group));
        const item: IngestItem = {
          summary: summarizeGroup(group),
          ...stored,
          contentHash: hash,
          dedupeKey: submissionDedupeKey(hash, key, 0),
          tokenId: submitterOf(c),
        };
        return { item, hash, beside: { trajectories, tokenTexts: group.token_texts ?? null } };
      },
    );
    return idempotent(c, run, "scored_data", hash, key, async () => {
      const [outcome] = await ingestGroups(c.env, run, [item], timings, keepAliveOf(c));
      // A retry of a stored submission: say so rather than claim a second group.
      if (outcome!.duplicate) return { status: "received", duplicate: true };
      await storeBeside(c.env, run, outcome!.groupId, beside);
      if (outcome!.status !== "buffered") return { status: "received" };
      const { bufferedSequences } = await coordinator(c, run).releaseBuffered(run, outcome!.envId!);
      return { status: "buffered", buffer_size: bufferedSequences };
    });
  },
);
