import { leaseResponseSchema } from "../../../../core/wire/api-schemas";
import { leaseRequestSchema } from "../../../../core/wire/schemas";
import { coordinator, runOf } from "../../../context";
import { batchResponse, timedLease } from "../../../delivery";
import { ApiError } from "../../../errors";
import { submitterOf } from "../../../middleware/auth";
import { jsonBody } from "../../../request";
import { settingsOf } from "../../../settings";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest, runParams } from "../../define";

export const leaseBatch = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/batches/lease",
    "x-scope": "trainer",
    summary: "Lease the next exact-size batch",
    description:
      "Exactly-once together with ack: an expired lease is redelivered as the same batch, and concurrent trainers never receive the same group.",
    request: { params: runParams, body: jsonRequest(leaseRequestSchema, false) },
    responses: {
      200: {
        description: "The batch (header `x-batch-id`), with a manifest entry per group.",
        content: jsonContent(leaseResponseSchema),
      },
      204: { description: "No batch can be formed now; `X-Atropos-Edge-Reason` says why." },
      ...bodyErrors(),
      ...errors({ 409: "No trainer has registered in this run." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const body = await jsonBody(c, leaseRequestSchema, { optional: true });
    const outcome = await timedLease(c, () =>
      coordinator(c, run).lease(run, {
        consumer: "lease",
        leaseSeconds: body.lease_seconds ?? settingsOf(c.env).DEFAULT_LEASE_SECONDS,
        maxStaleness: body.max_staleness ?? null,
        holder: submitterOf(c),
      }),
    );
    if (outcome.kind === "not_registered") {
      throw new ApiError(
        "CONFLICT",
        `run '${run}' has no registered trainer: POST /runs/${run}/register (or /register for the default run) with batch_size first`,
      );
    }
    if (outcome.kind === "none") {
      // With a staleness bound, an empty answer may have set stale groups aside: that is logged.
      c.set("quietPoll", body.max_staleness == null);
      return new Response(null, {
        status: 204,
        headers: { "X-Atropos-Edge-Reason": outcome.reason.replace(/[^\x20-\x7e]/g, "?") },
      });
    }
    const head = JSON.stringify({
      batch_id: outcome.batchId,
      lease_id: outcome.leaseId,
      step: outcome.step,
      lease_expires_at: outcome.leaseExpiresAt,
      redelivered: outcome.redelivered,
      // Per group, in batch order: what a trainer needs for staleness and bookkeeping, which the
      // Atropos-shaped groups themselves do not carry.
      groups: outcome.groups.map((g) => ({
        group_id: g.id,
        env_id: g.envId,
        policy_version: g.policyVersion,
        num_seqs: g.numSeqs,
        replayed: g.replayed ?? false,
      })),
    });
    return batchResponse(
      c.env,
      c.req.raw,
      outcome.groups,
      { prefix: `${head.slice(0, -1)},"batch":[`, suffix: "]}" },
      { "x-batch-id": outcome.batchId },
    );
  },
);
