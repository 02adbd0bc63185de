/**
 * Tool calls between raw model text and OpenAI `tool_calls`, in the format of the model's family
 * (src/core/tool-calls): the format a tokenizer implies, parsing a completion into calls, and
 * replaying earlier calls into the next prompt so it extends the sampled sequence.
 */

import {
  isToolFormatName,
  type ToolCallFormat,
  type ToolFormatName,
  toolFormat,
  toolFormatForFamily,
} from "../core/tool-calls/index";
import type { ChatMessage, ToolCall } from "../core/wire/group-types";
import { resolveTokenizerFamily } from "./tokenizers/registry";

export interface ParsedToolOutput {
  /** Text before the first call (null when empty). */
  content: string | null;
  toolCalls: ToolCall[];
}

/**
 * The format for a tokenizer (a bundled family name, or a model name that resolves to one),
 * unless `override` names one ("auto" and undefined mean: from the tokenizer).
 */
export function toolFormatFor(
  tokenizerName: string | null | undefined,
  override?: ToolFormatName | "auto" | null,
): ToolCallFormat {
  if (override && override !== "auto") return toolFormat(override);
  return toolFormatForFamily(tokenizerName ? resolveTokenizerFamily(tokenizerName) : null);
}

/** A request's `tool_format` field, checked (undefined when absent or "auto"). */
export function requestedToolFormat(value: unknown): ToolFormatName | undefined {
  if (value === undefined || value === null || value === "auto") return undefined;
  if (isToolFormatName(value)) return value;
  throw new Error(`unknown tool_format ${JSON.stringify(value)}`);
}

/**
 * The calls of a completion as OpenAI `tool_calls`, or null when it holds none or any call is
 * malformed: then the reply stays text and whoever runs the tools parses it again to tell the
 * model what was wrong (vLLM would drop the malformed call silently).
 */
export function parseToolCalls(
  text: string,
  format: ToolCallFormat,
  newId?: () => string,
): ParsedToolOutput | null {
  const parsed = format.parse(text, newId);
  if (parsed.calls.length === 0 || parsed.errors.length > 0) return null;
  return { content: parsed.content, toolCalls: parsed.calls };
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

  /**
   * Assistant messages with tool_calls → assistant messages whose content is the raw text (the
   * remembered one, else the calls as `format` writes them). Formats replayed structured keep
   * their calls for the template to render.
   */
  toTemplateMessages(messages: ChatMessage[], format: ToolCallFormat): ChatMessage[] {
    if (format.replay === "structured") return messages;
    return messages.map((message) => {
      const calls = message.tool_calls;
      if (message.role !== "assistant" || !calls || calls.length === 0) return message;
      const known = calls[0] ? this.rawById.get(calls[0].id) : undefined;
      const { tool_calls: _dropped, ...rest } = message;
      if (known !== undefined) return { ...rest, content: known };
      const prefix =
        typeof message.content === "string" && message.content ? `${message.content}\n` : "";
      return { ...rest, content: `${prefix}${format.render(calls)}` };
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
