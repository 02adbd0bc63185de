import type { ChatMessage, ToolCall } from "../../core/group-types";

/** Hermes tool-call format: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`. */
const TOOL_CALL_PATTERN = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

export interface ParsedToolOutput {
  /** Text before the first call (null when empty). */
  content: string | null;
  toolCalls: ToolCall[];
}

export function newToolCallId(): string {
  return `call_${crypto.randomUUID().replace(/-/g, "").slice(0, 24)}`;
}

/**
 * Parses Hermes tool calls out of raw model text. Returns null when the text holds no valid call
 * (then it is plain content). Calls whose JSON is malformed are skipped, like vLLM's hermes parser.
 */
export function parseHermesToolCalls(
  text: string,
  newId: () => string = newToolCallId,
): ParsedToolOutput | null {
  const toolCalls: ToolCall[] = [];
  for (const match of text.matchAll(TOOL_CALL_PATTERN)) {
    const call = parseCall(match[1] ?? "");
    if (call) toolCalls.push({ id: newId(), type: "function", function: call });
  }
  if (toolCalls.length === 0) return null;
  const before = text.slice(0, text.indexOf("<tool_call>")).trim();
  return { content: before.length > 0 ? before : null, toolCalls };
}

function parseCall(json: string): ToolCall["function"] | null {
  try {
    const value = JSON.parse(json) as unknown;
    if (!value || typeof value !== "object") return null;
    const { name, arguments: args } = value as { name?: unknown; arguments?: unknown };
    if (typeof name !== "string") return null;
    return { name, arguments: typeof args === "string" ? args : JSON.stringify(args ?? {}) };
  } catch {
    return null;
  }
}

/** Best-effort raw text for calls whose original text is unknown. */
export function renderHermesToolCalls(calls: ToolCall[]): string {
  return calls
    .map((call) => {
      let args: unknown = call.function.arguments;
      try {
        args = JSON.parse(call.function.arguments);
      } catch {
        // keep the string as is
      }
      return `<tool_call>\n${JSON.stringify({ name: call.function.name, arguments: args })}\n</tool_call>`;
    })
    .join("\n");
}

/**
 * Remembers the raw text each tool-calling completion was parsed from, so replaying the
 * assistant message renders exactly the sampled text (and multi-turn prefix matching holds).
 * Bounded: the oldest entries go first.
 */
export class ToolCallTextLookup {
  private readonly rawById = new Map<string, string>();

  constructor(private readonly limit = 1024) {}

  remember(calls: ToolCall[], rawText: string): void {
    for (const call of calls) {
      this.rawById.set(call.id, rawText);
      if (this.rawById.size > this.limit) {
        const oldest = this.rawById.keys().next().value;
        if (oldest !== undefined) this.rawById.delete(oldest);
      }
    }
  }

  /** Assistant messages with tool_calls → assistant messages whose content is the raw text. */
  toTemplateMessages(messages: ChatMessage[]): ChatMessage[] {
    return messages.map((message) => {
      const calls = message.tool_calls;
      if (message.role !== "assistant" || !calls || calls.length === 0) return message;
      const known = calls[0] ? this.rawById.get(calls[0].id) : undefined;
      const { tool_calls: _dropped, ...rest } = message;
      if (known !== undefined) return { ...rest, content: known };
      const prefix =
        typeof message.content === "string" && message.content ? `${message.content}\n` : "";
      return { ...rest, content: `${prefix}${renderHermesToolCalls(calls)}` };
    });
  }

  clear(): void {
    this.rawById.clear();
  }

  /** The remembered texts by call id, for storing between requests (the inference proxy). */
  toRecord(): Record<string, string> {
    return Object.fromEntries(this.rawById);
  }

  static fromRecord(record: Record<string, string>, limit?: number): ToolCallTextLookup {
    const lookup = new ToolCallTextLookup(limit);
    for (const [id, raw] of Object.entries(record)) lookup.rawById.set(id, raw);
    return lookup;
  }
}
