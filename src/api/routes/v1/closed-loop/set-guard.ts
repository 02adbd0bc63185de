import { privateTargetReason } from "../../../../core/closed-loop/webhook-target";
import { guardConfigRequestSchema, guardConfigSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { privateWebhooksAllowed } from "../../../regression-guard";
import { jsonBody } from "../../../request";
import { setGuard } from "../../../storage/guard";
import { bodyErrors, defineRoute, jsonContent, jsonRequest, runParams } from "../../define";

export const setGuardRoute = defineRoute(
  {
    method: "put",
    path: "/runs/{run}/guard",
    "x-scope": "trainer",
    summary: "Configure the regression guard",
    description:
      'Fields left out keep their values. action: alert | raise_replay {fraction} | set_weights {weights: {env_id: weight}} | pause_env {env_id}. A webhook_url on a loopback, private or link-local address (or a local host name) is refused unless the operator sets GUARD_WEBHOOK_ALLOW_PRIVATE="true".',
    request: { params: runParams, body: jsonRequest(guardConfigRequestSchema) },
    responses: {
      200: { description: "The settings now.", content: jsonContent(guardConfigSchema) },
      ...bodyErrors("The body fails the schema, or webhook_url points into a private network."),
    },
  },
  async (c) => {
    const run = runOf(c);
    const change = await jsonBody(c, guardConfigRequestSchema);
    const reason = change.webhook_url ? privateTargetReason(change.webhook_url) : null;
    if (reason !== null && !privateWebhooksAllowed(c.env)) {
      const msg = `webhook_url must be a public address: ${reason} (an operator can allow private targets by setting GUARD_WEBHOOK_ALLOW_PRIVATE to true)`;
      throw new ApiError("VALIDATION_FAILED", msg, [
        { type: "value_error", loc: ["body", "webhook_url"], msg },
      ]);
    }
    return c.json(await setGuard(c.env.DB, run, change));
  },
);
