import { z } from "zod";
import { ackResponseSchema } from "../../../core/api-schemas";
import { ackRequestSchema } from "../../../core/schemas";
import { coordinator, runOf } from "../../context";
import { unwrapRpc } from "../../errors";
import { jsonBody } from "../../request";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest, runParams } from "../define";

export const ackBatch = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/batches/{batchId}/ack",
    "x-scope": "trainer",
    summary: "Acknowledge a leased batch",
    description: "Idempotent: acking an acked batch answers `already_acked: true`.",
    request: {
      params: runParams.extend({ batchId: z.string() }),
      body: jsonRequest(ackRequestSchema, false),
    },
    responses: {
      200: { description: "Acknowledged.", content: jsonContent(ackResponseSchema) },
      ...bodyErrors(),
      ...errors({
        404: "No such batch in the run.",
        409: "The lease expired and the batch was redelivered to another lease.",
      }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const body = await jsonBody(c, ackRequestSchema, { optional: true });
    const batchId = c.req.param("batchId") ?? "";
    return c.json(unwrapRpc(await coordinator(c, run).ack(run, batchId, body.lease_id)));
  },
);
