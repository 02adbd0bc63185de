/**
 * Mistral (Nemo): `[TOOL_CALLS][{"name": …, "arguments": {…}, "id": "a1B2c3D4e"}, …]` (vLLM's
 * `mistral` parser). Its template accepts only 9-character alphanumeric call ids, in the calls
 * and in the tool results' `tool_call_id`; ids the model wrote are kept, missing ones generated.
 * Calls are replayed structured: the template must see them to keep its roles alternating.
 */
import {
  argumentsValue,
  callFromObject,
  contentBefore,
  errorText,
  mistralCallId,
  type ParsedToolText,
  spacedJson,
  type ToolCallFormat,
} from "./format";
import { jsonValueEnd } from "./json-scan";

const MARKER = "[TOOL_CALLS]";
const MISTRAL_ID = /^[A-Za-z0-9]{9}$/;

export const mistralFormat: ToolCallFormat = {
  name: "mistral",
  parallel: true,
  replay: "structured",
  parse(text, newId = mistralCallId): ParsedToolText {
    const start = text.indexOf(MARKER);
    const result: ParsedToolText = { content: contentBefore(text, start), calls: [], errors: [] };
    if (start < 0) return result;
    let at = start + MARKER.length;
    while (at < text.length && /\s/.test(text[at]!)) at++;
    const end = jsonValueEnd(text, at);
    if (end < 0) {
      result.errors.push(
        at >= text.length || "[{".includes(text[at]!)
          ? "truncated tool call: the JSON list after [TOOL_CALLS] never closes"
          : "bad tool call: [TOOL_CALLS] must be followed by a JSON list of calls",
      );
      return result;
    }
    let value: unknown;
    try {
      value = JSON.parse(text.slice(at, end));
    } catch (err) {
      result.errors.push(`bad tool call (not JSON): ${errorText(err)}`);
      return result;
    }
    for (const item of Array.isArray(value) ? value : [value]) {
      const written = (item as { id?: unknown } | null)?.id;
      const id = typeof written === "string" && MISTRAL_ID.test(written) ? written : newId();
      const call = callFromObject(item, id);
      if (typeof call === "string") result.errors.push(`bad tool call: ${call}`);
      else result.calls.push(call);
    }
    return result;
  },
  render(calls) {
    const items = calls.map((call) =>
      spacedJson({ name: call.function.name, arguments: argumentsValue(call), id: call.id }),
    );
    return `${MARKER}[${items.join(", ")}]`;
  },
  prompt(tools) {
    return (
      `[AVAILABLE_TOOLS]${spacedJson(tools)}[/AVAILABLE_TOOLS]\n` +
      'To call tools, reply with [TOOL_CALLS] and a JSON list: [TOOL_CALLS][{"name": <function-name>, "arguments": <args-json-object>}]'
    );
  },
  newId: mistralCallId,
  callStart: (text) => text.indexOf(MARKER),
};
