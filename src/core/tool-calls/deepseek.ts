/**
 * DeepSeek V3's tool-call tokens (vLLM's `deepseek_v3` parser):
 * `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`.
 * Its bundled template renders calls in history (when content is null) but ignores `tools`, so
 * the tool list goes into the system prompt (`prompt`). The format has no call ids.
 */
import {
  argumentsValue,
  contentBefore,
  errorText,
  openAiCallId,
  type ParsedToolText,
  type ToolCallFormat,
  toolLines,
} from "./format";

const CALLS_BEGIN = "<｜tool▁calls▁begin｜>";
const CALLS_END = "<｜tool▁calls▁end｜>";
const CALL_BEGIN = "<｜tool▁call▁begin｜>";
const CALL_END = "<｜tool▁call▁end｜>";
const SEP = "<｜tool▁sep｜>";
const CALL =
  /<｜tool▁call▁begin｜>([\s\S]*?)<｜tool▁sep｜>([\s\S]*?)\n```(?:json)?\n([\s\S]*?)\n```<｜tool▁call▁end｜>/g;

export const deepseekV3Format: ToolCallFormat = {
  name: "deepseek_v3",
  parallel: true,
  replay: "raw",
  parse(text, newId = openAiCallId): ParsedToolText {
    const start = deepseekV3Format.callStart(text);
    const result: ParsedToolText = { content: contentBefore(text, start), calls: [], errors: [] };
    if (start < 0) return result;
    const region = text.slice(start);
    let complete = 0;
    for (const match of region.matchAll(CALL)) {
      complete++;
      const name = match[2]!.trim();
      try {
        const args = JSON.parse(match[3]!) as unknown;
        if (!args || typeof args !== "object" || Array.isArray(args))
          throw new Error("arguments must be a JSON object");
        result.calls.push({
          id: newId(),
          type: "function",
          function: { name, arguments: JSON.stringify(args) },
        });
      } catch (err) {
        result.errors.push(`bad arguments for ${name}: ${errorText(err)}`);
      }
    }
    const begun = region.split(CALL_BEGIN).length - 1;
    if (begun > complete || (begun === 0 && !region.includes(CALLS_END)))
      result.errors.push(
        `truncated or malformed tool call: each call is ${CALL_BEGIN}function${SEP}NAME, a \`\`\`json block, then ${CALL_END}`,
      );
    return result;
  },
  render(calls) {
    const items = calls.map(
      (call) =>
        `${CALL_BEGIN}function${SEP}${call.function.name}\n\`\`\`json\n${JSON.stringify(argumentsValue(call))}\n\`\`\`${CALL_END}`,
    );
    return `${CALLS_BEGIN}${items.join("\n")}${CALLS_END}`;
  },
  prompt(tools) {
    return (
      `## Tools\nYou may call these functions:\n${toolLines(tools)}\n\n` +
      `To call functions, reply with ${CALLS_BEGIN}, then for each call ${CALL_BEGIN}function${SEP}<function-name>\n\`\`\`json\n<args-json-object>\n\`\`\`${CALL_END} (calls separated by a newline), then ${CALLS_END}.`
    );
  },
  newId: openAiCallId,
  callStart(text) {
    const a = text.indexOf(CALLS_BEGIN);
    const b = text.indexOf(CALL_BEGIN);
    return a < 0 ? b : b < 0 ? a : Math.min(a, b);
  },
};
