import { openAiRequestSchema, openAiResponseSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { forwardProxyCall, sessionIdOf } from "../../../proxy";
import { bodyErrors, defineRoute, jsonContent, jsonRequest } from "../../define";
import { proxyErrors } from "./proxy-chat-completions";
import { sessionParams } from "./proxy-params";

export const proxyCompletions = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/proxy/{session}/v1/completions",
    "x-scope": "contributor",
    summary: "OpenAI text completion through the run's servers, token-tracked in the session",
    request: { params: sessionParams, body: jsonRequest(openAiRequestSchema) },
    responses: {
      200: {
        description: "The text completion (with `stream: true`, OpenAI Server-Sent Events).",
        content: jsonContent(openAiResponseSchema),
      },
      ...bodyErrors("The body is not a JSON object."),
      ...proxyErrors,
    },
  },
  (c) => forwardProxyCall(c, runOf(c), sessionIdOf(c), "completion", true),
);
