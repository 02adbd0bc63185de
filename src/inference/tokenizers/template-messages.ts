/**
 * Chats adapted to what a chat template can render, judged from its source:
 * - templates that never render tool calls (Gemma 3, Llama 3.0) get each call as the text the
 *   tool format writes, and tool results as a user turn;
 * - templates that refuse roles out of alternation (Mistral, Gemma) get tool results that answer
 *   no structured call of the message before them (a malformed call's error) as a user turn;
 * - templates that place the system message in the last user turn (Mistral) get it folded into
 *   the first, so the prompt of a later turn still extends the earlier one;
 * - templates that `tojson` the arguments get them as an object, as Hugging Face passes them.
 */

import { argumentsValue, type ToolCallFormat } from "../../core/tool-calls/format";
import type { ChatMessage } from "../../core/wire/group-types";

export interface TemplateShape {
  rendersToolCalls: boolean;
  alternatesRoles: boolean;
  systemInLastUser: boolean;
  argumentsAsObjects: boolean;
}

export function templateShape(source: string): TemplateShape {
  return {
    rendersToolCalls: /tool_calls/.test(source),
    alternatesRoles: /must alternate/.test(source),
    systemInLastUser: /loop\.last and system_message/.test(source),
    argumentsAsObjects: /arguments\s*\|\s*tojson|function\s*\|\s*tojson/.test(source),
  };
}

export function adaptMessages(
  messages: ChatMessage[],
  shape: TemplateShape,
  format: ToolCallFormat,
): ChatMessage[] {
  let out = messages;
  if (shape.systemInLastUser) out = foldSystem(out);
  if (!shape.rendersToolCalls) out = out.map((m) => callsAsText(m, format));
  if (!shape.rendersToolCalls || shape.alternatesRoles) out = resultsAsUserTurns(out);
  if (shape.argumentsAsObjects) out = out.map(argumentsAsObjects);
  return out;
}

function foldSystem(messages: ChatMessage[]): ChatMessage[] {
  const [first, ...rest] = messages;
  const userAt = rest.findIndex((m) => m.role === "user");
  if (first?.role !== "system" || userAt < 0 || typeof first.content !== "string") return messages;
  const user = rest[userAt]!;
  const folded = { ...user, content: `${first.content}\n\n${String(user.content ?? "")}` };
  return rest.map((m, i) => (i === userAt ? folded : m));
}

function callsAsText(message: ChatMessage, format: ToolCallFormat): ChatMessage {
  if (message.role !== "assistant" || !message.tool_calls?.length) return message;
  const { tool_calls: calls, ...rest } = message;
  const before =
    typeof message.content === "string" && message.content ? `${message.content}\n` : "";
  return { ...rest, content: `${before}${format.render(calls)}` };
}

/**
 * Tool results the template cannot show as such become user turns; neighbouring user turns merge
 * (one turn per round of results keeps the roles alternating).
 */
function resultsAsUserTurns(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  let answerable = new Set<string>();
  for (const message of messages) {
    if (message.role === "assistant")
      answerable = new Set((message.tool_calls ?? []).map((c) => c.id));
    const asUser =
      message.role === "tool" &&
      !(typeof message.tool_call_id === "string" && answerable.has(message.tool_call_id));
    if (!asUser) {
      out.push(message);
      continue;
    }
    const text = String(message.content ?? "");
    const last = out.at(-1);
    if (last?.role === "user" && typeof last.content === "string") {
      out[out.length - 1] = { ...last, content: `${last.content}\n${text}` };
    } else out.push({ role: "user", content: text });
  }
  return out;
}

function argumentsAsObjects(message: ChatMessage): ChatMessage {
  if (!message.tool_calls?.length) return message;
  return {
    ...message,
    tool_calls: message.tool_calls.map((call) => ({
      ...call,
      function: { ...call.function, arguments: argumentsValue(call) as string },
    })),
  };
}
