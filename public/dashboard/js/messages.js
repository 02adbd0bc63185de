// @ts-check
// Chat messages as plain text. Content may be a string, multimodal parts, null, or anything else
// an environment sent; all of it is shown as text, never interpreted as markup. Tool calls show
// as `name(k=v)` with the tool's answer under them (tool-calls.js), turn by turn.
import { h } from "./dom.js";
import { formatCall, isMultiTurn, pairToolResults, toolCallsOf } from "./tool-calls.js";

const KNOWN_ROLES = new Set(["system", "user", "assistant", "tool"]);

/**
 * @param {unknown} content
 * @returns {string}
 */
export function contentText(content) {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) return "";
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        if (part && typeof part === "object") {
          const p = /** @type {Record<string, unknown>} */ (part);
          if (p.type === "text" && typeof p.text === "string") return p.text;
          if (p.type === "image_url" || p.type === "image") return "[image]";
        }
        return JSON.stringify(part);
      })
      .join("\n");
  }
  return JSON.stringify(content, null, 2);
}

/** @param {Record<string, unknown>} m */
const textOf = (m) => contentText(m.content);

/**
 * One tool call and, under it, the result its tool message returned.
 * @param {import("./tool-calls.js").ToolCallView} call
 * @param {Record<string, unknown> | undefined} result
 */
function toolCallView(call, result) {
  const answer = result ? contentText(result.content) : null;
  return h(
    "div",
    { class: "tool-call", "data-tool": call.name },
    h(
      "code",
      { class: "tool-call-sig", "data-field": "tool_call" },
      formatCall(call.name, call.args),
    ),
    h(
      "pre",
      { class: `tool-result${answer === null ? " muted" : ""}`, "data-field": "tool_result" },
      answer === null ? "(no result)" : `→ ${answer}`,
    ),
  );
}

/**
 * @param {Record<string, unknown>} message
 * @param {string | null} turn "turn N" for an assistant message of a multi-turn conversation
 * @param {Map<number, Record<string, unknown>> | undefined} results tool messages by call index
 */
function messageView(message, turn, results) {
  const role = typeof message.role === "string" ? message.role : String(message.role);
  const { calls, text } =
    role === "assistant"
      ? toolCallsOf(message, textOf(message))
      : { calls: [], text: textOf(message) };
  const extras = [];
  if (typeof message.reward === "number") extras.push(`reward: ${message.reward}`);
  return h(
    "div",
    { class: `msg msg-${KNOWN_ROLES.has(role) ? role : "other"}`, "data-role": role },
    h("div", { class: "msg-role" }, turn ? `${role} · ${turn}` : role),
    text === "" && calls.length > 0
      ? null
      : h(
          "pre",
          { class: "msg-content" },
          text === "" ? h("span", { class: "muted" }, "(empty)") : text,
        ),
    calls.length
      ? h(
          "div",
          { class: "tool-calls" },
          calls.map((c, i) => toolCallView(c, results?.get(i))),
        )
      : null,
    extras.length ? h("pre", { class: "msg-extra" }, extras.join("\n")) : null,
  );
}

/**
 * A conversation turn by turn: assistant turns numbered when there are several, each tool call
 * with its result under it (the tool messages so answered are not repeated).
 * @param {Record<string, unknown>[] | null | undefined} messages
 */
export function messageList(messages) {
  if (!messages || messages.length === 0) return null;
  const list = messages.map((m) => (m && typeof m === "object" ? m : { role: "?", content: m }));
  const { results, paired } = pairToolResults(list, textOf);
  const numbered = isMultiTurn(list);
  let turn = 0;
  return h(
    "div",
    { class: "messages" },
    list.map((m, i) => {
      if (paired.has(i)) return null;
      const label = numbered && m.role === "assistant" ? `turn ${++turn}` : null;
      return messageView(m, label, results.get(i));
    }),
  );
}
