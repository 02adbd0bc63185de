import { z } from "zod";
import { sha256Hex } from "../../../core/codecs/sha256";
import { scoredDataSchema } from "../../../core/wire/schemas";
import { inflateBody, parseJson } from "../../body";
import { coordinator, keepAliveOf, runOf } from "../../context";
import { validateGroup } from "../../group-validation";
import { ingestGroups } from "../../ingest";
import { ingestItemOf, submissionDedupeKey } from "../../ingest-item";
import { withInflated } from "../../memory-budget";
import { submitterOf } from "../../middleware/auth";
import { bodyLimits } from "../../request";
import { validIdempotencyKey } from "../../storage/idempotency";
import { readSubmissionBody } from "../../submission-body";
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
  // Inflating, parsing and validating a body is what holds a whole group in memory, so it runs
  // under the isolate's memory budget, charged by the body that arrived (a body still on the wire
  // holds nothing, so a stalled upload delays no one); the commit that follows (waiting on R2 and
  // D1) holds only the stored bytes and a summary, so other bodies can be parsed meanwhile.
  async (c) => {
    const run = runOf(c);
    const timings = c.get("timings");
    const key = validIdempotencyKey(c.req.header("idempotency-key"));
    const body = await timings.measure("read", () => readSubmissionBody(c));
    const { item, hash } = await withInflated(
      c.env,
      body,
      (raw) => inflateBody(raw, bodyLimits(c).maxInflatedBytes),
      async (bytes) => {
        const hash = await timings.measure("hash", () => sha256Hex(bytes));
        const json = await timings.measure("parse", () => parseJson(bytes));
        const group = await timings.measure("validate", () => validateGroup(json));
        const item = await timings.measure("canonical", () =>
          ingestItemOf(group, json, {
            dedupeKey: submissionDedupeKey(hash, key, 0, submitterOf(c)),
            tokenId: submitterOf(c),
          }),
        );
        return { item, hash };
      },
    );
    return idempotent(c, run, "scored_data", hash, key, async () => {
      const [outcome] = await ingestGroups(c.env, run, [item], timings, keepAliveOf(c));
      // A retry of a stored submission: say so rather than claim a second group.
      if (outcome!.duplicate) return { status: "received", duplicate: true };
      if (outcome!.status !== "buffered") return { status: "received" };
      const { bufferedSequences } = await coordinator(c, run).releaseBuffered(run, outcome!.envId!);
      return { status: "buffered", buffer_size: bufferedSequences };
    });
  },
);
