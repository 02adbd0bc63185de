import { z } from "zod";
import { ackResponseSchema } from "../../../../core/wire/api-schemas";
import { ackRequestSchema } from "../../../../core/wire/schemas";
import { coordinator, runOf } from "../../../context";
import { unwrapRpc } from "../../../errors";
import { submitterOf } from "../../../middleware/auth";
import { jsonBody } from "../../../request";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest, runParams } from "../../define";

export const ackBatch = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/batches/{batchId}/ack",
    "x-scope": "trainer",
    summary: "Acknowledge a leased batch",
    description:
      "Send the lease_id the lease answered. Repeating the ack with the lease that completed the batch answers `already_acked: true`; a lapsed or unknown lease id, or no lease id while another trainer's lease (or a redelivery) is live, is refused with 409 saying which.",
    request: {
      params: runParams.extend({ batchId: z.string() }),
      body: jsonRequest(ackRequestSchema, false),
    },
    responses: {
      200: { description: "Acknowledged.", content: jsonContent(ackResponseSchema) },
      ...bodyErrors(),
      ...errors({
        404: "No such batch in the run.",
        409: "The lease id lapsed (the batch was leased again), was never a lease of this batch, or is missing while another lease of the batch is live; the message says which.",
      }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const body = await jsonBody(c, ackRequestSchema, { optional: true });
    const batchId = c.req.param("batchId") ?? "";
    const timings = c.get("timings");
    const { result, readRow } = await timings.measure("ack", async () =>
      coordinator(c, run).ack(run, batchId, body.lease_id, submitterOf(c)),
    );
    // Server-Timing says whether the ack read the batch first (two D1 round trips, not one).
    timings.describe("ack", readRow ? "read the batch" : "from the lease's write");
    return c.json(unwrapRpc(result));
  },
);
