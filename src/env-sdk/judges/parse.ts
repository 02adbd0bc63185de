/**
 * Reading scores out of judge replies, leniently: JSON (bare or in a fenced block), per-dimension
 * lines ("Task completion: 8/10"), or one overall score ("Score: 7/10", "Composite: 0.72").
 * Out-of-range values are clamped and flagged; a reply with no score is a failure with a reason.
 */
import {
  DEFAULT_RUBRIC_WEIGHTS,
  RUBRIC_DIMENSIONS,
  type RubricDimension,
  type RubricWeights,
} from "../../core/wire/judge-schemas";
import { compositeScore } from "./rubric";

export type ParsedScore =
  | {
      ok: true;
      /** 0..1 */
      score: number;
      dimensions: Partial<Record<RubricDimension, number>>;
      /** A value was outside its range and was clamped. */
      clamped: boolean;
    }
  | { ok: false; reason: string };

const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));

/** JSON values in a reply: fenced blocks first, then balanced {…} spans, then the whole text. */
export function jsonCandidates(text: string): unknown[] {
  const out: unknown[] = [];
  const tryParse = (s: string) => {
    try {
      out.push(JSON.parse(s));
    } catch {
      // not JSON: other forms are tried
    }
  };
  for (const m of text.matchAll(/```(?:json|JSON)?\s*\n?([\s\S]*?)```/g)) tryParse(m[1]!.trim());
  for (let start = text.indexOf("{"); start >= 0; start = text.indexOf("{", start + 1)) {
    let depth = 0;
    let inString = false;
    for (let i = start; i < text.length; i++) {
      const c = text[i];
      if (inString) {
        if (c === "\\") i++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === "{") depth++;
      else if (c === "}" && --depth === 0) {
        tryParse(text.slice(start, i + 1));
        break;
      }
    }
  }
  tryParse(text.trim());
  return out;
}

const normaliseKey = (k: string) =>
  k
    .toLowerCase()
    .replace(/[^a-z]+/g, "_")
    .replace(/^_|_$/g, "");

function numberOf(v: unknown): number | null {
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  if (v && typeof v === "object" && "score" in v) return numberOf((v as { score: unknown }).score);
  return null;
}

/** A 0–10 dimension value (clamped). */
function dimensionValue(raw: number): { value: number; clamped: boolean } {
  const value = clamp(raw, 0, 10);
  return { value, clamped: value !== raw };
}

/**
 * An overall score to 0..1: "7/10" → 0.7; without a denominator, values ≤ 1 are already 0..1
 * and values up to 10 are out of 10; anything else is clamped.
 */
export function overallValue(raw: number, outOf?: number): { value: number; clamped: boolean } {
  let v = raw;
  if (outOf !== undefined && outOf > 0) v = raw / outOf;
  else if (raw > 1 && raw <= 10) v = raw / 10;
  const value = clamp(v, 0, 1);
  return { value, clamped: value !== v };
}

const OVERALL_KEYS = [
  "composite",
  "composite_score",
  "final_composite_score",
  "final_score",
  "overall",
  "score",
];

function fromJson(value: unknown, weights: RubricWeights): ParsedScore | null {
  if (typeof value === "number") {
    const o = overallValue(value);
    return { ok: true, score: o.value, dimensions: {}, clamped: o.clamped };
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return null;
  const entries = Object.entries(value as Record<string, unknown>).map(
    ([k, v]) => [normaliseKey(k), v] as const,
  );
  const nested = entries.find(
    ([k, v]) => (k === "scores" || k === "dimensions") && v && typeof v === "object",
  );
  const source = nested
    ? Object.entries(nested[1] as Record<string, unknown>).map(
        ([k, v]) => [normaliseKey(k), v] as const,
      )
    : entries;
  const dimensions: Partial<Record<RubricDimension, number>> = {};
  let clamped = false;
  for (const [k, v] of source) {
    const dim = RUBRIC_DIMENSIONS.find((d) => d === k);
    const n = numberOf(v);
    if (dim && n !== null) {
      const d = dimensionValue(n);
      dimensions[dim] = d.value;
      clamped ||= d.clamped;
    }
  }
  const composite = compositeScore(dimensions, weights);
  if (composite !== null && Object.keys(dimensions).length === RUBRIC_DIMENSIONS.length) {
    return { ok: true, score: composite, dimensions, clamped };
  }
  for (const key of OVERALL_KEYS) {
    const hit = entries.find(([k]) => k === key);
    const n = hit ? numberOf(hit[1]) : null;
    if (n !== null) {
      const o = overallValue(n);
      return { ok: true, score: o.value, dimensions, clamped: clamped || o.clamped };
    }
  }
  if (composite !== null) return { ok: true, score: composite, dimensions, clamped };
  return null;
}

const NUMBER = String.raw`(-?\d+(?:\.\d+)?)(?:\s*(?:/|out of)\s*(\d+(?:\.\d+)?))?`;

function fromText(text: string, weights: RubricWeights): ParsedScore | null {
  const dimensions: Partial<Record<RubricDimension, number>> = {};
  let clamped = false;
  for (const d of RUBRIC_DIMENSIONS) {
    const label = d.replace(/_/g, "[ _-]");
    const m = new RegExp(
      String.raw`${label}\s*(?:\*\*)?\s*[:=-]\s*(?:\*\*)?\s*${NUMBER}`,
      "i",
    ).exec(text);
    if (!m) continue;
    const raw = Number(m[1]);
    const outOf = m[2] === undefined ? 10 : Number(m[2]);
    const d10 = dimensionValue(outOf > 0 ? (raw / outOf) * 10 : raw);
    dimensions[d] = d10.value;
    clamped ||= d10.clamped;
  }
  const overall = [
    ...text.matchAll(
      new RegExp(
        String.raw`(?:composite(?:\s+score)?|final\s+score|overall(?:\s+score)?|score)\s*(?:\(0(?:\.0)?\s*-\s*1(?:\.0)?\))?\s*(?:\*\*)?\s*[:=]\s*(?:\*\*)?\s*${NUMBER}`,
        "gi",
      ),
    ),
  ].at(-1);
  if (overall) {
    const o = overallValue(
      Number(overall[1]),
      overall[2] === undefined ? undefined : Number(overall[2]),
    );
    return { ok: true, score: o.value, dimensions, clamped: clamped || o.clamped };
  }
  const composite = compositeScore(dimensions, weights);
  return composite === null ? null : { ok: true, score: composite, dimensions, clamped };
}

/** A pointwise rubric reply → a 0..1 score, or why none could be read. */
export function parseRubricReply(
  text: string,
  weights: RubricWeights = DEFAULT_RUBRIC_WEIGHTS,
): ParsedScore {
  for (const candidate of jsonCandidates(text)) {
    const parsed = fromJson(candidate, weights);
    if (parsed) return parsed;
  }
  const parsed = fromText(text, weights);
  if (parsed) return parsed;
  const preview = text.trim().slice(0, 80).replace(/\s+/g, " ");
  return {
    ok: false,
    reason: `no score in the reply (${preview === "" ? "empty" : `"${preview}"`})`,
  };
}

export type ParsedRanking =
  | { ok: true; scores: number[]; clamped: boolean }
  | { ok: false; reason: string };

/** A ranking reply → one 0..1 score per trajectory (ids 1..n), or why not. */
export function parseRankingReply(text: string, n: number): ParsedRanking {
  let found: Map<number, number> | null = null;
  for (const candidate of jsonCandidates(text)) {
    const list = Array.isArray(candidate)
      ? candidate
      : candidate && typeof candidate === "object" && "scores" in candidate
        ? (candidate as { scores: unknown }).scores
        : null;
    const map = new Map<number, number>();
    if (Array.isArray(list)) {
      list.forEach((entry, i) => {
        if (typeof entry === "number") map.set(i + 1, entry);
        else if (entry && typeof entry === "object") {
          const e = entry as Record<string, unknown>;
          const id = numberOf(e.id ?? e.trajectory_id ?? i + 1);
          const score = numberOf(e.score);
          if (id !== null && score !== null) map.set(id, score);
        }
      });
    } else if (list && typeof list === "object") {
      for (const [k, v] of Object.entries(list)) {
        const id = Number(k.replace(/\D+/g, ""));
        const score = numberOf(v);
        if (Number.isInteger(id) && score !== null) map.set(id, score);
      }
    }
    if (map.size > 0) {
      found = map;
      break;
    }
  }
  if (!found) {
    const map = new Map<number, number>();
    for (const m of text.matchAll(/trajectory\s*#?\s*(\d+)\s*[:=-]\s*(-?\d+(?:\.\d+)?)/gi)) {
      map.set(Number(m[1]), Number(m[2]));
    }
    if (map.size > 0) found = map;
  }
  if (!found) return { ok: false, reason: "no trajectory scores in the ranking reply" };
  const missing = Array.from({ length: n }, (_, i) => i + 1).filter((id) => !found!.has(id));
  if (missing.length > 0) {
    return {
      ok: false,
      reason: `the ranking reply has no score for trajectory ${missing.join(", ")}`,
    };
  }
  const raw = Array.from({ length: n }, (_, i) => found!.get(i + 1)!);
  // One scale for the whole reply: a judge that answered out of 10 did so for every trajectory.
  const outOf = raw.some((x) => x > 1) && raw.every((x) => x <= 10) ? 10 : 1;
  const scores = raw.map((x) => clamp(x / outOf, 0, 1));
  return { ok: true, scores, clamped: scores.some((s, i) => s !== raw[i]! / outOf) };
}
