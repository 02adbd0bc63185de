import type { ChatMessage, ToolCall } from "../../sdk/env";
/**
 * Hermes-format tool calls in raw model text: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.
 * Used when the inference layer did not already parse them into `tool_calls`. Unlike Atropos'
 * parser, quotes are not rewritten (apostrophes inside arguments survive).
 */

export interface ParsedToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

export function parseHermesToolCalls(text: string): { calls: ParsedToolCall[]; errors: string[] } {
  const calls: ParsedToolCall[] = [];
  const errors: string[] = [];
  for (const m of text.matchAll(/<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g)) {
    try {
      const parsed = JSON.parse(m[1]!) as { name?: unknown; arguments?: unknown };
      const args =
        typeof parsed.arguments === "string" ? JSON.parse(parsed.arguments) : parsed.arguments;
      if (typeof parsed.name !== "string") throw new Error("missing name");
      calls.push({ name: parsed.name, arguments: (args ?? {}) as Record<string, unknown> });
    } catch (err) {
      errors.push(`bad tool call: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return { calls, errors };
}

/** OpenAI tool_calls → parsed calls (arguments JSON decoded). */
export function fromOpenAiToolCalls(toolCalls: ToolCall[]): {
  calls: ParsedToolCall[];
  errors: string[];
} {
  const calls: ParsedToolCall[] = [];
  const errors: string[] = [];
  for (const call of toolCalls) {
    try {
      const args = call.function.arguments ? JSON.parse(call.function.arguments) : {};
      calls.push({ name: call.function.name, arguments: args as Record<string, unknown> });
    } catch (err) {
      errors.push(`bad arguments for ${call.function.name}: ${String(err)}`);
    }
  }
  return { calls, errors };
}

/**
 * One assistant reply in a tool loop: its tool calls (structured `tool_calls` when the inference
 * layer parsed them, else Hermes text), with the reply appended to `messages` as it was sent.
 */
export function takeAssistantTurn(
  message: { content: string | null; tool_calls?: ToolCall[] },
  messages: ChatMessage[],
): { text: string; calls: ParsedToolCall[]; errors: string[] } {
  const text = message.content ?? "";
  const parsed = message.tool_calls?.length
    ? fromOpenAiToolCalls(message.tool_calls)
    : parseHermesToolCalls(text);
  messages.push({
    role: "assistant",
    content: message.content,
    ...(message.tool_calls?.length ? { tool_calls: message.tool_calls } : {}),
  });
  return { text, ...parsed };
}

/** Text before the first tool call, think blocks removed: the step's "thought". */
export function thoughtOf(text: string): string {
  const cut = text.indexOf("<tool_call>");
  return (cut >= 0 ? text.slice(0, cut) : text).replace(/<\/?think>/g, "").trim();
}
