/**
 * Final-answer extraction and equivalence for math answers, without a CAS: numbers (commas,
 * decimals, fractions, \frac, percent, currency/units) and lightly normalised strings.
 */

/** Contents of every `\boxed{...}` / `\fbox{...}` (brace-balanced), in order. */
export function extractBoxed(text: string): string[] {
  const out: string[] = [];
  const re = /\\(?:boxed|fbox)\s*\{/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    let depth = 1;
    let i = m.index + m[0].length;
    const start = i;
    for (; i < text.length && depth > 0; i++) {
      if (text[i] === "{") depth++;
      else if (text[i] === "}") depth--;
    }
    if (depth === 0) out.push(text.slice(start, i - 1).trim());
    re.lastIndex = i;
  }
  return out;
}

/**
 * The final answer of a response: last `\boxed{}`, else last `<answer>…</answer>`, else the text
 * after `####`. Thinking (`<think>…</think>`) is ignored. null when none is present.
 */
export function extractFinalAnswer(text: string): string | null {
  const visible = text.replace(/<think>[\s\S]*?<\/think>/g, "");
  const boxed = extractBoxed(visible);
  if (boxed.length > 0) return boxed[boxed.length - 1]!;
  const tags = [...visible.matchAll(/<answer>([\s\S]*?)<\/answer>/gi)];
  if (tags.length > 0) {
    const inner = tags[tags.length - 1]![1]!.trim();
    const innerBoxed = extractBoxed(inner);
    return innerBoxed.length > 0 ? innerBoxed[innerBoxed.length - 1]! : inner;
  }
  const hashes = visible.lastIndexOf("####");
  if (hashes >= 0) {
    const rest = visible
      .slice(hashes + 4)
      .trim()
      .split("\n")[0]!
      .trim();
    return rest.length > 0 ? rest : null;
  }
  return null;
}

/** Gold answers may be a GSM8K solution ("… #### 42") or a bare answer. */
export function extractGoldAnswer(gold: string): string {
  const hashes = gold.lastIndexOf("####");
  if (hashes >= 0) return gold.slice(hashes + 4).trim();
  const boxed = extractBoxed(gold);
  return boxed.length > 0 ? boxed[boxed.length - 1]! : gold.trim();
}

function stripLatex(s: string): string {
  return s
    .replace(/\\text\s*\{([^}]*)\}/g, "$1")
    .replace(/\\mathrm\s*\{([^}]*)\}/g, "$1")
    .replace(/\\(?:left|right|displaystyle|,|;|!|quad)/g, "")
    .replace(/\\\$/g, "$")
    .replace(/^\$+|\$+$/g, "")
    .trim();
}

/** A number for `s`, or null. `percent` is true when it was written with a % sign. */
export function parseNumber(raw: string): { value: number; percent: boolean } | null {
  let s = stripLatex(raw).replace(/\s+/g, " ").trim();
  s = s.replace(/^(?:x|y|n|answer)\s*=\s*/i, "");
  const percent = /(\\?%|percent)\s*$/i.test(s);
  s = s.replace(/(\\?%|percent)\s*$/i, "").trim();
  s = s.replace(/^[$€£]\s*/, "").replace(/\s*(?:dollars?|cents?|units?|[a-z]+)\.?$/i, "");
  s = s.replace(/\.$/, "").trim();
  const frac = /^(-?)\\d?frac\s*\{\s*(-?[\d.,]+)\s*\}\s*\{\s*(-?[\d.,]+)\s*\}$/.exec(s);
  if (frac) {
    const n = toNumber(frac[2]!);
    const d = toNumber(frac[3]!);
    if (n === null || d === null || d === 0) return null;
    return { value: (frac[1] ? -1 : 1) * (n / d), percent };
  }
  const slash = /^(-?[\d.,]+)\s*\/\s*(-?[\d.,]+)$/.exec(s);
  if (slash) {
    const n = toNumber(slash[1]!);
    const d = toNumber(slash[2]!);
    if (n === null || d === null || d === 0) return null;
    return { value: n / d, percent };
  }
  const value = toNumber(s);
  return value === null ? null : { value, percent };
}

function toNumber(s: string): number | null {
  const t = s.trim();
  // Commas only as thousands separators (1,234 or 1,234,567.5).
  if (!/^-?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?$/.test(t) || t === "" || t === "-") return null;
  const v = Number(t.replace(/,/g, ""));
  return Number.isFinite(v) ? v : null;
}

function normalizeText(s: string): string {
  return stripLatex(s)
    .toLowerCase()
    .replace(/\s+/g, "")
    .replace(/^[({[]|[)}\]]$/g, "")
    .replace(/\.$/, "");
}

/** Whether two answers are the same number (within tolerance) or the same normalised text. */
export function answersEquivalent(candidate: string, gold: string, tolerance = 1e-6): boolean {
  const a = parseNumber(candidate);
  const b = parseNumber(gold);
  if (a && b) {
    const close = (x: number, y: number) => Math.abs(x - y) <= tolerance * Math.max(1, Math.abs(y));
    if (close(a.value, b.value)) return true;
    // "50%" vs "0.5" (or the reverse): accept the percent reading too.
    if (a.percent !== b.percent) {
      return a.percent ? close(a.value / 100, b.value) : close(a.value, b.value / 100);
    }
    return false;
  }
  if (a || b) return false;
  return normalizeText(candidate) === normalizeText(gold) && normalizeText(gold).length > 0;
}
