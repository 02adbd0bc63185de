// @ts-check
// Tool calls in chat messages, read the way a person reads them: `guess(n=32)` with the result
// under it, instead of escaped JSON. Calls come from OpenAI `tool_calls` or from Hermes
// `<tool_call>{…}</tool_call>` blocks in the assistant's text; results are the `tool` messages
// that answer them (by tool_call_id, else in order). Everything stays plain text.

const HERMES_CALL = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

/**
 * @typedef {{ name: string, args: unknown, id: string | null }} ToolCallView
 */

/**
 * `name(k=v, …)`: strings quoted, numbers and booleans bare, anything else as compact JSON.
 * @param {string} name
 * @param {unknown} args
 */
export function formatCall(name, args) {
  if (args === null || args === undefined) return `${name}()`;
  if (typeof args !== "object" || Array.isArray(args)) return `${name}(${JSON.stringify(args)})`;
  const parts = Object.entries(/** @type {Record<string, unknown>} */ (args)).map(
    ([k, v]) => `${k}=${JSON.stringify(v)}`,
  );
  return `${name}(${parts.join(", ")})`;
}

/** @param {unknown} text */
function parseArgs(text) {
  if (typeof text !== "string") return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * The tool calls of one assistant message, and its text without Hermes call markup.
 * @param {Record<string, unknown>} message
 * @param {string} text the message's content as text
 * @returns {{ calls: ToolCallView[], text: string }}
 */
export function toolCallsOf(message, text) {
  /** @type {ToolCallView[]} */
  const calls = [];
  if (Array.isArray(message.tool_calls)) {
    for (const raw of message.tool_calls) {
      const call = /** @type {Record<string, unknown>} */ (raw ?? {});
      const fn = /** @type {Record<string, unknown>} */ (call.function ?? call);
      calls.push({
        name: String(fn.name ?? "?"),
        args: parseArgs(fn.arguments ?? fn.parameters),
        id: typeof call.id === "string" ? call.id : null,
      });
    }
  }
  const hermes = [...text.matchAll(HERMES_CALL)];
  if (calls.length === 0) {
    for (const m of hermes) {
      const parsed = /** @type {Record<string, unknown> | string} */ (parseArgs(m[1]));
      if (parsed && typeof parsed === "object" && typeof parsed.name === "string") {
        calls.push({ name: parsed.name, args: parseArgs(parsed.arguments), id: null });
      } else {
        calls.push({ name: "(unparsed tool call)", args: m[1], id: null });
      }
    }
  }
  return { calls, text: hermes.length ? text.replace(HERMES_CALL, "").trim() : text };
}

/**
 * Pairs each assistant tool call with the `tool` message answering it; returns the indices of the
 * tool messages so paired (shown under their call, not on their own).
 * @param {Record<string, unknown>[]} messages
 * @param {(m: Record<string, unknown>) => string} textOf
 * @returns {{ results: Map<number, Map<number, Record<string, unknown>>>, paired: Set<number> }}
 *   results: assistant message index → call index → its tool message
 */
export function pairToolResults(messages, textOf) {
  /** @type {Map<number, Map<number, Record<string, unknown>>>} */
  const results = new Map();
  /** @type {Set<number>} */
  const paired = new Set();
  messages.forEach((m, i) => {
    if (m.role !== "assistant") return;
    const { calls } = toolCallsOf(m, textOf(m));
    if (calls.length === 0) return;
    /** @type {Map<number, Record<string, unknown>>} */
    const byCall = new Map();
    // The tool messages right after this turn answer its calls.
    /** @type {number[]} */
    const answers = [];
    for (let j = i + 1; j < messages.length && messages[j]?.role === "tool"; j++) answers.push(j);
    calls.forEach((call, c) => {
      const byId = call.id
        ? answers.find((j) => messages[j]?.tool_call_id === call.id && !paired.has(j))
        : undefined;
      const next = byId ?? answers.find((j) => !paired.has(j));
      if (next === undefined) return;
      paired.add(next);
      byCall.set(c, /** @type {Record<string, unknown>} */ (messages[next]));
    });
    results.set(i, byCall);
  });
  return { results, paired };
}

/**
 * Assistant turns in a conversation: more than one, or any tool call, makes it multi-turn.
 * @param {Record<string, unknown>[] | null | undefined} messages
 */
export function isMultiTurn(messages) {
  if (!messages) return false;
  const assistant = messages.filter((m) => m?.role === "assistant").length;
  return assistant > 1 || messages.some((m) => m?.role === "tool" || m?.tool_calls !== undefined);
}
