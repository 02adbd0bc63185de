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
  const row = numberRowJson(value);
  if (row !== null) return row;
  const parts = new Array<string>(value.length);
  for (let i = 0; i < value.length; i++) parts[i] = floatArrayJson(value[i]);
  return `[${parts.join(",")}]`;
}

/** Python writes floats with a fraction (1.0); JS would write 1. 1e21 and up are exponent form. */
function needsFraction(value: number): boolean {
  return Number.isInteger(value) && Math.abs(value) < 1e21;
}

function floatJson(value: unknown): string {
  if (typeof value !== "number") return JSON.stringify(value) ?? "null";
  if (!Number.isFinite(value)) return "null";
  return needsFraction(value) ? `${value}.0` : `${value}`;
}

/**
 * A row of numbers written by native calls: a run of non-integral values by JSON.stringify (about
 * 3× faster than a string per number for real logprobs, whose values rarely repeat), a run of
 * integral ones by join with ".0," (a prompt's 1.0s, zero-filled rows). A row that alternates
 * often is written value by value. Null when an entry is not a number.
 */
function numberRowJson(row: readonly unknown[]): string | null {
  let runs = 0;
  for (let i = 0; i < row.length; i++) {
    const v = row[i];
    if (typeof v !== "number") return null;
    if (i === 0 || needsFraction(v) !== needsFraction(row[i - 1] as number)) runs++;
  }
  if (runs > 1 + row.length / 16) return null;
  const parts = new Array<string>(runs);
  for (let start = 0, k = 0; start < row.length; k++) {
    const whole = needsFraction(row[start] as number);
    let end = start + 1;
    while (end < row.length && needsFraction(row[end] as number) === whole) end++;
    const run = start === 0 && end === row.length ? row : row.slice(start, end);
    parts[k] = whole ? `${run.join(".0,")}.0` : JSON.stringify(run).slice(1, -1);
    start = end;
  }
  return `[${parts.join(",")}]`;
}

/**
 * Whether a row's JSON is mostly values LZ77 cannot shorten (distinct non-integral numbers),
 * rather than runs such as a prompt's 1.0s: the first compress faster by Huffman coding alone.
 */
function mostlyDistinct(row: unknown, json: string): boolean {
  if (!Array.isArray(row)) return false;
  let whole = 0;
  for (const v of row) if (typeof v === "number" && needsFraction(v)) whole++;
  // An integral value's JSON is about 4 characters ("1.0,"); at most a quarter of the text.
  return whole * 4 * 4 <= json.length;
}

/**
 * A piece of a group's canonical JSON; `floats` when it is a row of a float field whose values
 * are mostly distinct (see mostlyDistinct).
 */
export interface CanonicalPiece {
  text: string;
  floats: boolean;
}

/**
 * The canonical JSON of a validated group, in pieces: each top-level key whose value is a list of
 * lists (tokens, masks, logprobs…) yields one piece per row, so a caller can encode and stream a
 * large group without ever holding its whole JSON text (a 16 × 8k-token group with logprobs is
 * ~3.6 MB of text), and can compress float rows (which repeat nothing) differently from the
 * rest. The pieces concatenated are exactly `canonicalGroupJson`.
 * Extra keys sent by envs (e.g. `seed`) are dropped, as Atropos does; the API's env id is
 * authoritative.
 */
export function* canonicalGroupPieces(
  group: Partial<Record<(typeof GROUP_KEYS)[number], unknown>>,
  envId: number | null,
): Generator<CanonicalPiece> {
  for (const [k, key] of GROUP_KEYS.entries()) {
    const value = key === "env_id" ? envId : (group[key] ?? null);
    const head = `${k === 0 ? "{" : ","}"${key}":`;
    const float = value !== null && FLOAT_KEYS.has(key);
    if (!Array.isArray(value) || !value.some(Array.isArray)) {
      const text = float ? floatArrayJson(value) : (JSON.stringify(value) ?? "null");
      yield { text: head + text, floats: false };
      continue;
    }
    yield { text: `${head}[`, floats: false };
    for (let i = 0; i < value.length; i++) {
      const row = float ? floatArrayJson(value[i]) : (JSON.stringify(value[i]) ?? "null");
      yield { text: i === 0 ? row : `,${row}`, floats: float && mostlyDistinct(value[i], row) };
    }
    yield { text: "]", floats: false };
  }
  yield { text: "}", floats: false };
}

/** The served JSON of a validated group (see `canonicalGroupPieces`). */
export function canonicalGroupJson(
  group: Partial<Record<(typeof GROUP_KEYS)[number], unknown>>,
  envId: number | null,
): string {
  const texts: string[] = [];
  for (const piece of canonicalGroupPieces(group, envId)) texts.push(piece.text);
  return texts.join("");
}
