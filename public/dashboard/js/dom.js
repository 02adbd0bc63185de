// @ts-check
// DOM helpers. Data is only ever inserted as text nodes or attribute values, never parsed as HTML.

/** @typedef {string | number | Node | null | undefined | false} Child */
/** @typedef {Child | Child[] | Child[][] | Child[][][]} Children */

/**
 * @param {Node} parent
 * @param {Children[]} children
 */
function appendAll(parent, children) {
  for (const child of /** @type {Child[]} */ (children.flat(Infinity))) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

/**
 * Creates an element. String and number children become text nodes.
 * `on*` attributes must be functions (event listeners); strings are refused so that data can
 * never become an inline handler.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, unknown> | null} [attrs]
 * @param {...Children} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) {
      if (typeof value !== "function") throw new TypeError(`${key} must be a function`);
      el.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    } else if (key === "class") {
      el.className = String(value);
    } else if (key === "style" && typeof value === "object") {
      Object.assign(el.style, value);
    } else if (key === "value" && "value" in el) {
      /** @type {HTMLInputElement} */ (/** @type {unknown} */ (el)).value = String(value);
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  appendAll(el, children);
  return el;
}

/**
 * Replaces all children of `parent`.
 * @param {Element} parent
 * @param {...Children} children
 */
export function setChildren(parent, ...children) {
  const fragment = document.createDocumentFragment();
  appendAll(fragment, children);
  parent.replaceChildren(fragment);
}

/**
 * Sets text only when it changed, so polling does not disturb selection or screen readers.
 * @param {Element | null | undefined} el
 * @param {string | number} value
 */
export function setText(el, value) {
  if (!el) return;
  const text = String(value);
  if (el.textContent !== text) el.textContent = text;
}

/**
 * @param {ParentNode} root
 * @param {string} selector
 * @returns {HTMLElement}
 */
export function $(root, selector) {
  const el = root.querySelector(selector);
  if (!(el instanceof HTMLElement)) throw new Error(`missing element ${selector}`);
  return el;
}

/**
 * A labelled key figure; `key` becomes `data-kpi` so tests and users can find it.
 * @param {string} key
 * @param {string} label
 * @param {string} [hint]
 */
export function kpi(key, label, hint) {
  return h(
    "div",
    { class: "kpi", "data-kpi-card": key },
    h("div", { class: "kpi-label" }, label),
    h("div", { class: "kpi-value", "data-kpi": key }, "–"),
    hint ? h("div", { class: "kpi-hint", "data-kpi-hint": key }, hint) : null,
  );
}

/**
 * A status pill; `tone` picks the colour.
 * @param {string} label
 * @param {"ok" | "warn" | "bad" | "info" | "muted"} tone
 */
export function pill(label, tone) {
  return h("span", { class: `pill pill-${tone}` }, label);
}
