/**
 * The served form of a group: exactly Atropos' 14 keys in order, absent optionals as null,
 * float fields written as floats (Python clients see `1.0`, not `1`, exactly as pydantic echoes).
 */
export const GROUP_KEYS = [
  "tokens",
  "masks",
  "scores",
  "advantages",
  "ref_logprobs",
  "messages",
  "generation_params",
  "inference_logprobs",
  "overrides",
  "group_overrides",
  "images",
  "env_id",
  "distill_token_ids",
  "distill_logprobs",
] as const;

const FLOAT_KEYS = new Set<string>([
  "scores",
  "advantages",
  "ref_logprobs",
  "inference_logprobs",
  "distill_logprobs",
]);

/** JSON for an array (of any depth) of floats, integral values written with a `.0`. */
export function floatArrayJson(value: unknown): string {
  if (!Array.isArray(value)) return floatJson(value);
  // One pass building the pieces (cheaper than stringify + a regex over ~1 MB per group).
  const parts = new Array<string>(value.length);
  for (let i = 0; i < value.length; i++) parts[i] = floatArrayJson(value[i]);
  return `[${parts.join(",")}]`;
}

function floatJson(value: unknown): string {
  if (typeof value !== "number") return JSON.stringify(value) ?? "null";
  if (!Number.isFinite(value)) return "null";
  // Python writes floats with a fraction (1.0); JS would write 1. 1e21 and up are exponent form.
  return Number.isInteger(value) && Math.abs(value) < 1e21 ? `${value}.0` : `${value}`;
}

/**
 * Serializes a validated group with the given env id (the API's record is authoritative).
 * Extra keys sent by envs (e.g. `seed`) are dropped, as Atropos does.
 */
export function canonicalGroupJson(
  group: Partial<Record<(typeof GROUP_KEYS)[number], unknown>>,
  envId: number | null,
): string {
  const parts: string[] = [];
  for (const key of GROUP_KEYS) {
    let value: unknown = key === "env_id" ? envId : group[key];
    if (value === undefined) value = null;
    const json =
      value !== null && FLOAT_KEYS.has(key) ? floatArrayJson(value) : JSON.stringify(value);
    parts.push(`"${key}":${json ?? "null"}`);
  }
  return `{${parts.join(",")}}`;
}
