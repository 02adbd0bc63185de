/**
 * Llama 3.2 (and 3.1) JSON calls: `{"name": …, "parameters": {…}}`, optionally after
 * `<|python_tag|>` (vLLM's `llama3_json` parser). Llama 3.2's template renders `tools` in the
 * first user message and refuses more than one call per assistant message, so a second call in
 * one reply is not run: the model is told to make it in its next message.
 */
import {
  argumentsValue,
  callFromObject,
  contentBefore,
  errorText,
  openAiCallId,
  type ParsedToolText,
  spacedJson,
  type ToolCallFormat,
} from "./format";
import { jsonValueEnd } from "./json-scan";

const PYTHON_TAG = "<|python_tag|>";
const CALL_START = /<\|python_tag\|>|\{\s*"name"\s*:/;

export const llama3JsonFormat: ToolCallFormat = {
  name: "llama3_json",
  parallel: false,
  replay: "raw",
  parse(text, newId = openAiCallId): ParsedToolText {
    const start = llama3JsonFormat.callStart(text);
    const result: ParsedToolText = { content: contentBefore(text, start), calls: [], errors: [] };
    if (start < 0) return result;
    let at = text.startsWith(PYTHON_TAG, start) ? start + PYTHON_TAG.length : start;
    const found: ToolCallOrError[] = [];
    while (at < text.length) {
      while (at < text.length && /[\s;]/.test(text[at]!)) at++;
      if (at >= text.length || text[at] !== "{") break;
      const end = jsonValueEnd(text, at);
      if (end < 0) {
        found.push("truncated tool call: the JSON object never closes");
        break;
      }
      try {
        found.push(
          callFromObject(JSON.parse(text.slice(at, end)), newId(), ["parameters", "arguments"]),
        );
      } catch (err) {
        found.push(`bad tool call (not JSON): ${errorText(err)}`);
      }
      at = end;
    }
    for (const item of found) {
      if (typeof item === "string") result.errors.push(item);
      else if (result.calls.length === 0) result.calls.push(item);
      else
        result.errors.push(
          `one tool call per message: this model's chat template (Llama 3.2) refuses parallel calls, so ${item.function.name} was not run; call it in your next message`,
        );
    }
    return result;
  },
  render(calls) {
    return calls
      .map((call) => spacedJson({ name: call.function.name, parameters: argumentsValue(call) }))
      .join("; ");
  },
  prompt(tools) {
    return (
      "Given the following functions, please respond with a JSON for a function call with its " +
      'proper arguments that best answers the given prompt.\n\nRespond in the format {"name": ' +
      'function name, "parameters": dictionary of argument name and its value}. Do not use ' +
      `variables. Call one function per message.\n\n${tools.map((t) => spacedJson(t)).join("\n\n")}`
    );
  },
  newId: openAiCallId,
  callStart(text) {
    return CALL_START.exec(text)?.index ?? -1;
  },
};

type ToolCallOrError = ReturnType<typeof callFromObject>;
