/**
 * Turns zod issues into FastAPI/pydantic-style 422 `detail` entries, which Atropos clients and
 * their users already know how to read.
 */
import type { z } from "zod";
import type { ValidationDetail } from "./api-schemas";

export type { ValidationDetail };

/**
 * Whether the issue's field is absent from the input. zod 4 leaves `input` out of its issues, so
 * "missing" is decided by the input itself: a field that is present with a wrong value (null, a
 * number for a string, 1e400) is answered with what is wrong with it, not "Field required".
 */
function isMissing(root: unknown, path: PropertyKey[]): boolean {
  if (path.length === 0) return root === undefined;
  const parent = valueAt(root, path.slice(0, -1));
  if (parent === null || typeof parent !== "object") return true;
  return !Object.hasOwn(parent, path[path.length - 1]!);
}

function pydanticType(
  issue: z.core.$ZodIssue,
  missing: boolean,
  value: unknown,
): { type: string; msg: string } {
  const params = (issue as { params?: { pydanticType?: string } }).params;
  if (params?.pydanticType) return { type: params.pydanticType, msg: issue.message };
  if (issue.code === "invalid_type") {
    if (missing) return { type: "missing", msg: "Field required" };
    if (typeof value === "number" && !Number.isFinite(value)) {
      // JSON's 1e400 parses to Infinity; pydantic answers the same way.
      return { type: "finite_number", msg: "Input should be a finite number" };
    }
    switch (issue.expected) {
      case "number":
        return { type: "float_type", msg: "Input should be a valid number" };
      case "int":
        return { type: "int_type", msg: "Input should be a valid integer" };
      case "string":
        return { type: "string_type", msg: "Input should be a valid string" };
      case "array":
        return { type: "list_type", msg: "Input should be a valid list" };
      case "object":
      case "record":
        return {
          type: "dict_type",
          msg: "Input should be a valid dictionary or object to extract fields from",
        };
      default:
        return { type: `${issue.expected}_type`, msg: issue.message };
    }
  }
  if (issue.code === "too_small" || issue.code === "too_big") {
    return { type: "value_error", msg: issue.message };
  }
  if (issue.code === "invalid_format")
    return { type: "string_pattern_mismatch", msg: issue.message };
  return { type: "value_error", msg: issue.message };
}

function valueAt(root: unknown, path: PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

export function toValidationDetails(
  error: z.ZodError,
  input: unknown,
  locPrefix: (string | number)[] = ["body"],
): ValidationDetail[] {
  return error.issues.slice(0, 20).map((issue) => {
    const path = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
    const explicit = (issue as { input?: unknown }).input;
    const value = explicit !== undefined ? explicit : valueAt(input, issue.path);
    const missing = explicit === undefined && isMissing(input, issue.path);
    const { type, msg } = pydanticType(issue, missing, value);
    const detail: ValidationDetail = { type, loc: [...locPrefix, ...path], msg };
    // Large nested inputs would make the error response as big as the request.
    if (type !== "missing") detail.input = summarizeInput(value);
    return detail;
  });
}

function summarizeInput(value: unknown): unknown {
  if (Array.isArray(value)) return value.length > 8 ? `<list of ${value.length} items>` : value;
  if (typeof value === "string" && value.length > 200) return `${value.slice(0, 200)}…`;
  if (value && typeof value === "object") {
    const keys = Object.keys(value);
    return keys.length > 16 ? `<object with ${keys.length} keys>` : value;
  }
  return value;
}

/** A one-line summary of validation failures for humans and logs. */
export function summarizeDetails(details: ValidationDetail[]): string {
  const first = details[0];
  if (!first) return "Invalid request body";
  const where = first.loc.join(".");
  const more = details.length > 1 ? ` (and ${details.length - 1} more problem(s))` : "";
  return `${where}: ${first.msg}${more}`;
}
