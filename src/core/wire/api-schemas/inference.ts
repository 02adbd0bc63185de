/**
 * A run's inference servers and the inference proxy's sessions (v1 and Atropos' wire).
 */
import { z } from "zod";
import { sequenceNodeSchema } from "../proxy-session";
import { APIServerConfigSchema } from "../server-config";

/** A run's inference server as GET /v1/runs/{run}/inference shows it: never its key. */
export const redactedServerSchema = APIServerConfigSchema.extend({
  api_key: z.null().describe("Never returned; see has_api_key."),
  has_api_key: z.boolean(),
});

export const runInferenceRequestSchema = z
  .array(APIServerConfigSchema)
  .min(1, "give at least one inference server")
  .describe("The run's inference servers, in the shape POST /v1/runs/{run}/env-workers takes.");

export const runInferenceSchema = z.object({
  run: z.string(),
  servers: z.array(redactedServerSchema),
  updated_at: z.number().int().nullable(),
});
export type RunInference = z.infer<typeof runInferenceSchema>;

/** An OpenAI request or answer, forwarded as is (the proxy checks the fields it uses). */
export const openAiRequestSchema = z
  .record(z.string(), z.unknown())
  .describe(
    "An OpenAI chat or text completion request (`stream: true` answers in Server-Sent Events).",
  );
export const openAiResponseSchema = z
  .record(z.string(), z.unknown())
  .describe("The OpenAI answer (chat.completion or text_completion).");

export const proxySessionStateSchema = z.object({
  run: z.string(),
  session: z.string(),
  status: z.enum(["open", "finished"]),
  created_at: z.number().int(),
  expires_at: z.number().int(),
  group_id: z.number().int().nullable(),
  nodes: z.array(sequenceNodeSchema),
});
export type ProxySessionState = z.infer<typeof proxySessionStateSchema>;

export const finishSessionResponseSchema = z.object({
  session: z.string(),
  group_id: z.number().int(),
  status: z.enum(["received", "buffered", "duplicate"]),
  sequences: z.number().int(),
});

/** Atropos' proxy wire: POST /sessions/create (both fields accepted; a run has its own servers). */
export const atroposSessionCreateSchema = z
  .object({ base_url: z.string().optional(), tool_parser: z.string().optional() })
  .catchall(z.unknown());
export const atroposSessionCreatedSchema = z.object({
  uuid: z.string(),
  /** The session's OpenAI base URL (relative to the API origin). */
  url: z.string(),
});
export const atroposNodesSchema = z.object({ nodes: z.array(sequenceNodeSchema) });
export const atroposSessionDeletedSchema = z.object({
  status: z.literal("deleted"),
  uuid: z.string(),
});
