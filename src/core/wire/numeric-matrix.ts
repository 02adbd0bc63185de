/**
 * Fast validation and lax coercion of the large numeric arrays in a scored group
 * (tokens, masks, logprobs). Zod's per-element checks cost ~20x more than a plain loop
 * on 100k-number payloads, so these run as zod custom checks with pydantic-style errors.
 */

export type NumericKind = "int" | "float";

export interface MatrixIssue {
  /** Path below the field, e.g. [3, 17]. */
  path: (string | number)[];
  type: string;
  msg: string;
  input: unknown;
}

function coerceScalar(value: unknown, kind: NumericKind): number | MatrixIssue {
  if (typeof value === "number" && kind === "float" && !Number.isFinite(value)) {
    // JSON's 1e400 parses to Infinity, which would be stored (and delivered) as null.
    return {
      path: [],
      type: "finite_number",
      msg: "Input should be a finite number",
      input: value,
    };
  }
  if (typeof value === "number") {
    if (kind === "int" && !Number.isInteger(value)) {
      return Number.isFinite(value)
        ? {
            path: [],
            type: "int_from_float",
            msg: "Input should be a valid integer, got a number with a fractional part",
            input: value,
          }
        : { path: [], type: "int_type", msg: "Input should be a valid integer", input: value };
    }
    return value;
  }
  // Pydantic's lax mode: numeric strings and (for floats) booleans are accepted.
  if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value))) {
    return coerceScalar(Number(value), kind);
  }
  if (kind === "float" && typeof value === "boolean") return value ? 1 : 0;
  return kind === "int"
    ? { path: [], type: "int_type", msg: "Input should be a valid integer", input: value }
    : { path: [], type: "float_type", msg: "Input should be a valid number", input: value };
}

/** Validates (and coerces in place) a list of numbers. Returns the first issue, or null. */
export function checkNumberList(value: unknown, kind: NumericKind): MatrixIssue | null {
  if (!Array.isArray(value)) {
    return { path: [], type: "list_type", msg: "Input should be a valid list", input: value };
  }
  for (let i = 0; i < value.length; i++) {
    const v = value[i];
    // Fast path: the overwhelmingly common, already-valid case.
    if (typeof v === "number" && (kind === "float" ? Number.isFinite(v) : Number.isInteger(v)))
      continue;
    const coerced = coerceScalar(v, kind);
    if (typeof coerced !== "number") return { ...coerced, path: [i] };
    value[i] = coerced;
  }
  return null;
}

/** Validates a list of lists of numbers (one list per sequence). */
export function checkNumberMatrix(value: unknown, kind: NumericKind): MatrixIssue | null {
  if (!Array.isArray(value)) {
    return { path: [], type: "list_type", msg: "Input should be a valid list", input: value };
  }
  for (let s = 0; s < value.length; s++) {
    const issue = checkNumberList(value[s], kind);
    if (issue) return { ...issue, path: [s, ...issue.path] };
  }
  return null;
}

/** Validates `[sequence][position][k]` arrays (distillation top-k). */
export function checkNumberCube(value: unknown, kind: NumericKind): MatrixIssue | null {
  if (!Array.isArray(value)) {
    return { path: [], type: "list_type", msg: "Input should be a valid list", input: value };
  }
  for (let s = 0; s < value.length; s++) {
    const issue = checkNumberMatrix(value[s], kind);
    if (issue) return { ...issue, path: [s, ...issue.path] };
  }
  return null;
}
