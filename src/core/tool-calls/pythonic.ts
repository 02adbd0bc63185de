/**
 * Pythonic calls, `[calculator(expression="1 + 2"), kv_get(key="total")]` (vLLM's `pythonic`
 * parser): the project's choice for templates that ignore `tools` and never render tool calls
 * (Gemma 3, Llama 3.0; DeepSeek V3 may opt in). The tool list and this format go into the system
 * prompt; earlier calls are replayed as the text the model wrote, results come back as a user turn.
 */
import { errorMessage } from "../errors";
import {
  argumentsValue,
  contentBefore,
  openAiCallId,
  type ParsedToolText,
  type ToolCallFormat,
  toolLines,
} from "./format";
import { PythonCallReader, PythonSyntaxError, pythonLiteral } from "./python-literal";

const CALL_START = /\[\s*[A-Za-z_][\w.-]*\s*\(/;

export const pythonicFormat: ToolCallFormat = {
  name: "pythonic",
  parallel: true,
  replay: "raw",
  parse(text, newId = openAiCallId): ParsedToolText {
    const start = pythonicFormat.callStart(text);
    const result: ParsedToolText = { content: contentBefore(text, start), calls: [], errors: [] };
    if (start < 0) return result;
    try {
      for (const call of new PythonCallReader(text, start).callList()) {
        result.calls.push({
          id: newId(),
          type: "function",
          function: { name: call.name, arguments: JSON.stringify(call.args) },
        });
      }
    } catch (err) {
      const truncated = err instanceof PythonSyntaxError && err.truncated;
      result.errors.push(
        `${truncated ? "truncated" : "bad"} tool call: ${errorMessage(err)} (write calls as [name(arg="value", n=1)])`,
      );
    }
    return result;
  },
  render(calls) {
    const items = calls.map((call) => {
      const args = argumentsValue(call);
      const pairs =
        args && typeof args === "object" && !Array.isArray(args)
          ? Object.entries(args as Record<string, unknown>).map(
              ([k, v]) => `${k}=${pythonLiteral(v)}`,
            )
          : [];
      return `${call.function.name}(${pairs.join(", ")})`;
    });
    return `[${items.join(", ")}]`;
  },
  prompt(tools) {
    return (
      "You may call functions to help with the task. The functions, as JSON schemas:\n" +
      `${toolLines(tools)}\n\n` +
      "To call functions, write a Python list of calls with keyword arguments on its own line, " +
      'e.g. [get_weather(city="Paris"), add(a=1, b=2)]. Their results come back in the next message.'
    );
  },
  newId: openAiCallId,
  callStart(text) {
    return CALL_START.exec(text)?.index ?? -1;
  },
};
