/**
 * The nesting depth of JSON text, found by one scan of its text (brackets outside strings) before
 * it is parsed. Python's json.loads raises RecursionError near 1000 levels, so a group whose
 * free-form fields (group_overrides, overrides, messages, ...) nest deeper would be stored and
 * then wedge every Atropos trainer that leases it; no real payload comes near MAX_JSON_DEPTH.
 */

/** The deepest nesting of objects and arrays a request body may have. */
export const MAX_JSON_DEPTH = 64;

export interface TooDeep {
  /** Where the too-deep value is: the member of the top-level object (and list index) holding it. */
  loc: (string | number)[];
  depth: number;
}

// What the scan stops at: brackets and quotes (and, in a top-level list, the commas that
// count its elements). A regular expression finds them in native code; the digits between them,
// most of a group's text, are never looked at one by one (a byte loop over a 2k-token group's
// 860 KB cost as much as parsing it).
const STOPS = /[{}[\]"]/g;
const LIST_STOPS = /[{}[\]",]/g;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const COMMA = 0x2c;

/** Where the string whose opening quote is at `open` ends (its closing quote), or -1. */
function stringEnd(text: string, open: number): number {
  for (let from = open + 1; ; ) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return -1;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    from = quote + 1;
  }
}

/**
 * Null when the JSON `text` nests at most `limit` levels, else where it first goes deeper.
 * Malformed text is left to JSON.parse; the scan only counts. The location is the key of the
 * top-level object (or of the object at index i of a top-level list) whose value is too deep.
 */
export function tooDeep(text: string, limit = MAX_JSON_DEPTH): TooDeep | null {
  const first = text.trimStart().charCodeAt(0);
  const topIsList = first === OPEN_ARRAY;
  const stops = topIsList ? LIST_STOPS : STOPS;
  let depth = 0;
  let index = 0;
  // The last string that started at the key level (depth 1 in an object, 2 in a list of objects).
  let keyStart = -1;
  let keyEnd = -1;
  stops.lastIndex = 0;
  for (let match = stops.exec(text); match; match = stops.exec(text)) {
    const i = match.index;
    const b = text.charCodeAt(i);
    if (b === QUOTE) {
      const end = stringEnd(text, i);
      if (end < 0) return null;
      if (depth === (topIsList ? 2 : 1)) {
        keyStart = i + 1;
        keyEnd = end;
      }
      stops.lastIndex = end + 1;
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      depth++;
      if (depth > limit) {
        const loc: (string | number)[] = topIsList ? [index] : [];
        if (keyStart >= 0) loc.push(text.slice(keyStart, keyEnd));
        return { loc, depth };
      }
    } else if (b === COMMA) {
      if (depth === 1) index++;
    } else {
      depth--;
      if (topIsList && depth === 1) keyStart = -1;
    }
  }
  return null;
}
