// @ts-check
// The contract between the shell (app.js) and each page, plus layout helpers shared by pages.
import { h } from "./dom.js";

/**
 * @typedef {{run: string, route: import("./router.js").Route, signal: AbortSignal, tick: number,
 *   refreshNow: () => void}} PageContext
 * @typedef {{
 *   title: string,
 *   poll: boolean,
 *   refresh(ctx: PageContext): Promise<void>,
 *   destroy?(): void
 * }} PageInstance
 * @typedef {(root: HTMLElement, ctx: PageContext) => PageInstance} PageFactory
 */

/**
 * A titled card.
 * @param {string} title
 * @param {import("./dom.js").Children[]} children
 * @param {Record<string, unknown>} [attrs]
 */
export function card(title, children, attrs = {}) {
  const id = `card-${title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
  return h(
    "section",
    { class: "card", "aria-labelledby": id, ...attrs },
    h("h2", { class: "card-title", id }, title),
    ...children,
  );
}

/**
 * A table with a header row; `caption` is visually hidden but read by screen readers.
 * @param {string} caption
 * @param {(string | {label: string, numeric?: boolean, title?: string})[]} columns
 * @param {Record<string, unknown>} [attrs]
 */
export function table(caption, columns, attrs = {}) {
  const tbody = h("tbody");
  const el = h(
    "table",
    { class: "data-table", ...attrs },
    h("caption", { class: "visually-hidden" }, caption),
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        columns.map((c) =>
          typeof c === "string"
            ? h("th", { scope: "col" }, c)
            : h("th", { scope: "col", class: c.numeric ? "num" : null, title: c.title }, c.label),
        ),
      ),
    ),
    tbody,
  );
  return { el, tbody };
}

/**
 * A table cell; numbers are right-aligned.
 * @param {import("./dom.js").Children} content
 * @param {{numeric?: boolean, field?: string, title?: string}} [opts]
 */
export function td(content, opts = {}) {
  return h(
    "td",
    { class: opts.numeric ? "num" : null, "data-field": opts.field, title: opts.title },
    content,
  );
}

/**
 * Wraps a table so it scrolls horizontally on narrow screens instead of overflowing the page.
 * @param {HTMLTableElement} tableEl
 * @param {string} label
 */
export function scroller(tableEl, label) {
  return h(
    "div",
    { class: "table-scroll", role: "region", "aria-label": label, tabindex: 0 },
    tableEl,
  );
}

/**
 * Cheap change detection so polling does not rebuild unchanged DOM (keeps focus and selection).
 * @returns {(value: unknown) => boolean} true when the value differs from the last one seen
 */
export function changeTracker() {
  let last = "";
  return (value) => {
    const next = JSON.stringify(value);
    if (next === last) return false;
    last = next;
    return true;
  };
}
