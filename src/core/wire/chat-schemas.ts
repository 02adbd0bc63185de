/**
 * The chat shapes a group carries (OpenAI's, as Atropos' ScoredData holds them): a message, a
 * tool call in it, a tool offered to the model. Types come from these schemas (`z.infer`).
 */
import { z } from "zod";

export const toolCallSchema = z.object({
  id: z.string(),
  type: z.literal("function"),
  function: z.object({ name: z.string(), arguments: z.string() }),
});
export type ToolCall = z.infer<typeof toolCallSchema>;

/** A tool offered to the model (OpenAI's `tools` entries). */
export const toolDefinitionSchema = z.object({
  type: z.literal("function"),
  function: z.object({
    name: z.string(),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type ToolDefinition = z.infer<typeof toolDefinitionSchema>;

export const chatMessageSchema = z
  .object({
    role: z.string(),
    // Atropos accepts any content value (string, multimodal parts, null).
    content: z.unknown(),
    tool_calls: z.array(toolCallSchema).optional(),
    tool_call_id: z.string().optional(),
    name: z.string().optional(),
    reward: z.number().optional(),
  })
  .catchall(z.unknown());
export type ChatMessage = z.infer<typeof chatMessageSchema>;
