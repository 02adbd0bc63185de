// @ts-check
// Chat messages as plain text. Content may be a string, multimodal parts, null, or anything else
// an environment sent; all of it is shown as text, never interpreted as markup.
import { h } from "./dom.js";

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

/**
 * @param {Record<string, unknown>} message
 */
function messageView(message) {
  const role = typeof message.role === "string" ? message.role : String(message.role);
  const text = contentText(message.content);
  const extras = [];
  if (message.tool_calls !== undefined)
    extras.push(`tool_calls: ${JSON.stringify(message.tool_calls, null, 2)}`);
  if (typeof message.reward === "number") extras.push(`reward: ${message.reward}`);
  return h(
    "div",
    { class: `msg msg-${KNOWN_ROLES.has(role) ? role : "other"}` },
    h("div", { class: "msg-role" }, role),
    h(
      "pre",
      { class: "msg-content" },
      text === "" ? h("span", { class: "muted" }, "(empty)") : text,
    ),
    extras.length ? h("pre", { class: "msg-extra" }, extras.join("\n")) : null,
  );
}

/**
 * @param {Record<string, unknown>[] | null | undefined} messages
 */
export function messageList(messages) {
  if (!messages || messages.length === 0) return null;
  return h(
    "div",
    { class: "messages" },
    messages.map((m) => messageView(m && typeof m === "object" ? m : { role: "?", content: m })),
  );
}
