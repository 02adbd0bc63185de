/**
 * Hermes / Qwen: `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, one block per call
 * (vLLM's `hermes` parser). Qwen 2.5 and Qwen 3 templates render `tools` and calls this way.
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
  toolLines,
} from "./format";

const OPEN = "<tool_call>";
const BLOCK = /<tool_call>([\s\S]*?)(<\/tool_call>|$)/g;

export const hermesFormat: ToolCallFormat = {
  name: "hermes",
  parallel: true,
  replay: "raw",
  parse(text, newId = openAiCallId): ParsedToolText {
    const result: ParsedToolText = {
      content: contentBefore(text, text.indexOf(OPEN)),
      calls: [],
      errors: [],
    };
    for (const match of text.matchAll(BLOCK)) {
      if (!match[2]) {
        result.errors.push("truncated tool call: <tool_call> without </tool_call>");
        continue;
      }
      try {
        const call = callFromObject(JSON.parse(match[1]!.trim()), newId());
        if (typeof call === "string") result.errors.push(`bad tool call: ${call}`);
        else result.calls.push(call);
      } catch (err) {
        result.errors.push(`bad tool call (not JSON): ${errorText(err)}`);
      }
    }
    return result;
  },
  render(calls) {
    return calls
      .map(
        (call) =>
          `${OPEN}\n${spacedJson({ name: call.function.name, arguments: argumentsValue(call) })}\n</tool_call>`,
      )
      .join("\n");
  },
  prompt(tools) {
    return (
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
      `You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n${toolLines(tools)}\n</tools>\n\n` +
      "For each function call, return a json object with function name and arguments within " +
      '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": ' +
      "<args-json-object>}\n</tool_call>"
    );
  },
  newId: openAiCallId,
  callStart: (text) => text.indexOf(OPEN),
};
