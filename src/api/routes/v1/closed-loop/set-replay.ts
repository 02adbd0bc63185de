import { replayConfigRequestSchema, replayConfigSchema } from "../../../../core/wire/api-schemas";
import { coordinator, runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { jsonBody } from "../../../request";
import { updateReplayConfig } from "../../../storage/replay";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest, runParams } from "../../define";

export const setReplay = defineRoute(
  {
    method: "put",
    path: "/runs/{run}/replay",
    "x-scope": "trainer",
    summary: "Turn the replay buffer on or off and set its parameters",
    description:
      "Fields left out keep their values (defaults: off, threshold 0.7, capacity 1024, max_replays 1, fraction 0.3). Applies from the next batch formed and the next ack.",
    request: { params: runParams, body: jsonRequest(replayConfigRequestSchema) },
    responses: {
      200: { description: "The settings now.", content: jsonContent(replayConfigSchema) },
      ...bodyErrors(),
      ...errors({ 404: "No such run (register a trainer first)." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const change = await jsonBody(c, replayConfigRequestSchema);
    const updated = await updateReplayConfig(c.env.DB, run, change);
    if (!updated) {
      throw new ApiError("NOT_FOUND", `run '${run}' does not exist; register a trainer first`);
    }
    // Replay mixing changes what a lease can form: the coordinator forgets an "empty" it kept.
    await coordinator(c, run).noteQueued();
    return c.json(updated);
  },
);
