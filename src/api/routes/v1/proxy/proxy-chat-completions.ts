import { openAiRequestSchema, openAiResponseSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { forwardProxyCall, sessionIdOf } from "../../../proxy";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest } from "../../define";
import { sessionParams } from "./proxy-params";

export const proxyErrors = errors({
  404: "The session expired (the message says when) or, on routes that do not create, does not exist.",
  409: "The run has no inference servers, the session is finished, or another call on it is in flight.",
  413: "The session's tracked sequences would outgrow its storage; finish it and start another.",
  503: "The run's inference servers failed.",
});

export const proxyChatCompletions = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/proxy/{session}/v1/chat/completions",
    "x-scope": "contributor",
    summary: "OpenAI chat completion through the run's servers, token-tracked in the session",
    description:
      "Point any OpenAI client's base URL at /v1/runs/{run}/proxy/{session}/v1. Hermes tool calls come back as tool_calls.",
    request: { params: sessionParams, body: jsonRequest(openAiRequestSchema) },
    responses: {
      200: {
        description: "The chat completion (with `stream: true`, OpenAI Server-Sent Events).",
        content: jsonContent(openAiResponseSchema),
      },
      ...bodyErrors("The body is not a JSON object."),
      ...proxyErrors,
    },
  },
  (c) => forwardProxyCall(c, runOf(c), sessionIdOf(c), "chat", true),
);
