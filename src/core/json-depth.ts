/**
 * The nesting depth of JSON text, found by one scan of its bytes (brackets outside strings) before
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

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

const decoder = new TextDecoder();

/**
 * Null when `bytes` nests at most `limit` levels, else where it first goes deeper. Malformed
 * text is left to JSON.parse; the scan only counts. The location is the key of the top-level
 * object (or of the object at index i of a top-level list) whose value is too deep.
 */
export function tooDeep(bytes: Uint8Array, limit = MAX_JSON_DEPTH): TooDeep | null {
  let depth = 0;
  let topIsList = false;
  let index = 0;
  // The last string that started at the key level (depth 1 in an object, 2 in a list of objects).
  let keyStart = -1;
  let keyEnd = -1;
  const n = bytes.length;
  for (let i = 0; i < n; i++) {
    const b = bytes[i]!;
    if (b === QUOTE) {
      const start = i + 1;
      for (i++; i < n; i++) {
        const c = bytes[i]!;
        if (c === BACKSLASH) i++;
        else if (c === QUOTE) break;
      }
      if (depth === (topIsList ? 2 : 1)) {
        keyStart = start;
        keyEnd = i;
      }
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (depth === 0) topIsList = b === OPEN_ARRAY;
      depth++;
      if (depth > limit) {
        const key = keyStart >= 0 ? decoder.decode(bytes.subarray(keyStart, keyEnd)) : null;
        const loc: (string | number)[] = topIsList ? [index] : [];
        if (key !== null) loc.push(key);
        return { loc, depth };
      }
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      depth--;
      if (topIsList && depth === 1) keyStart = -1;
    } else if (b === COMMA && topIsList && depth === 1) {
      index++;
    }
  }
  return null;
}
