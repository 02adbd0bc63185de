// @ts-check
// Token strip: each token as a chip, shaded by prompt/completion mask and coloured by logprob.
import { h } from "./dom.js";
import { fmtNum } from "./format.js";

/** Atropos marks positions that are not trained with -100 in `masks`. */
export const MASKED = -100;
const INITIAL_TOKENS = 2000;

/**
 * Background for a completion token: white-ish when the policy was sure, red as probability falls.
 * Lightness stays ≥ 60% so dark text keeps a contrast ratio above 4.5:1.
 * @param {number} logprob
 */
export function heatColor(logprob) {
  const p = Math.min(1, Math.max(0, Math.exp(logprob)));
  const lightness = 97 - (1 - p) * 36;
  return `hsl(8 86% ${lightness.toFixed(1)}%)`;
}

/**
 * Makes whitespace-only tokens visible while keeping line breaks.
 * @param {string} text
 */
export function visibleTokenText(text) {
  if (text === "") return "∅";
  return text.replace(/\n/g, "↵\n").replace(/\t/g, "→\t");
}

/**
 * @typedef {{tokens: number[], masks: number[] | null, logprobs: number[] | null,
 *   advantages: number[] | null, texts: string[] | null}} TokenSequence
 */

/**
 * Renders the tokens of one sequence. Renders the first INITIAL_TOKENS and offers the rest on
 * demand so 32k-token sequences do not freeze the tab.
 * @param {TokenSequence} seq
 * @param {{mode: "text" | "ids"}} options
 */
export function tokenStrip(seq, options) {
  const strip = h("div", {
    class: `token-strip token-mode-${options.mode}`,
    role: "group",
    "aria-label": `${seq.tokens.length} tokens`,
  });
  /** @param {number} from @param {number} to */
  const renderRange = (from, to) => {
    const fragment = document.createDocumentFragment();
    for (let i = from; i < to; i++) {
      const id = seq.tokens[i] ?? 0;
      const prompt = (seq.masks?.[i] ?? 0) === MASKED;
      const logprob = seq.logprobs?.[i];
      const text = seq.texts?.[i];
      const span = document.createElement("span");
      span.className = prompt ? "tok tok-prompt" : "tok tok-completion";
      // Atropos puts 1.0 at masked positions; only real logprobs (≤ 0) are shaded.
      const hasLogprob = !prompt && typeof logprob === "number" && logprob <= 0;
      if (hasLogprob) span.style.backgroundColor = heatColor(logprob);
      span.textContent =
        options.mode === "text" && typeof text === "string" ? visibleTokenText(text) : String(id);
      const details = [`#${i}`, `id ${id}`, prompt ? "prompt" : "completion"];
      if (typeof text === "string") details.push(JSON.stringify(text));
      if (hasLogprob)
        details.push(`logprob ${fmtNum(logprob, 4)} (p ${fmtNum(Math.exp(logprob), 3)})`);
      const advantage = seq.advantages?.[i];
      if (typeof advantage === "number") details.push(`advantage ${fmtNum(advantage, 4)}`);
      span.title = details.join(" · ");
      fragment.appendChild(span);
      if (options.mode === "ids") fragment.appendChild(document.createTextNode(" "));
    }
    strip.appendChild(fragment);
  };
  const first = Math.min(seq.tokens.length, INITIAL_TOKENS);
  renderRange(0, first);
  if (seq.tokens.length <= first) return strip;
  const more = h(
    "button",
    {
      type: "button",
      class: "btn btn-small",
      onclick: () => {
        more.remove();
        renderRange(first, seq.tokens.length);
      },
    },
    `Show remaining ${seq.tokens.length - first} tokens`,
  );
  return h("div", null, strip, more);
}

/** Legend explaining the token colours. */
export function tokenLegend() {
  const swatch = (
    /** @type {string} */ cls,
    /** @type {string} */ label,
    /** @type {string} */ color = "",
  ) =>
    h(
      "span",
      { class: "legend-item" },
      h("span", { class: `tok ${cls}`, style: color ? { backgroundColor: color } : {} }, "tok"),
      label,
    );
  return h(
    "div",
    { class: "token-legend", "aria-label": "Token colour legend" },
    swatch("tok-prompt", "prompt (masked, not trained)"),
    swatch("tok-completion", "completion, p ≈ 1", heatColor(0)),
    swatch("tok-completion", "p = 0.5", heatColor(Math.log(0.5))),
    swatch("tok-completion", "p ≈ 0.05", heatColor(Math.log(0.05))),
  );
}

/**
 * Number of trained (completion) positions.
 * @param {number[] | undefined | null} mask
 */
export function completionCount(mask) {
  if (!mask) return 0;
  let n = 0;
  for (const m of mask) if (m !== MASKED) n++;
  return n;
}
