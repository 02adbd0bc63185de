/**
 * Finds where a JSON value that starts at `from` ends, honouring strings and escapes; -1 when
 * the text ends first (a truncated value). Used to split `{…}; {…}` and `[…]` call lists.
 */
export function jsonValueEnd(text: string, from: number): number {
  const open = text[from];
  const close = open === "{" ? "}" : open === "[" ? "]" : null;
  if (!close) return -1;
  let depth = 0;
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}
