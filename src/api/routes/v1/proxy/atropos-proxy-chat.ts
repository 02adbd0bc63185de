import { openAiRequestSchema, openAiResponseSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { forwardProxyCall, sessionIdOf } from "../../../proxy";
import { bodyErrors, defineRoute, jsonContent, jsonRequest } from "../../define";
import { proxyErrors } from "./proxy-chat-completions";
import { sessionParams } from "./proxy-params";

export const atroposProxyChat = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/atropos-proxy/{session}/v1/chat/completions",
    "x-scope": "contributor",
    summary: "Atropos proxy wire: chat completion in a session",
    description: "The session must exist (POST …/atropos-proxy/sessions/create).",
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
  (c) => forwardProxyCall(c, runOf(c), sessionIdOf(c), "chat", false),
);
