// @ts-check
// Number and time formatting for display. Every function accepts null/undefined and shows "–".

const DASH = "–";

/**
 * @param {number | null | undefined} value
 * @returns {value is number}
 */
export function isNum(value) {
  return typeof value === "number" && Number.isFinite(value);
}

/** @param {number | null | undefined} value */
export function fmtInt(value) {
  return isNum(value) ? Math.round(value).toLocaleString("en-US") : DASH;
}

/**
 * Fixed decimals, trimmed for large values.
 * @param {number | null | undefined} value
 * @param {number} [digits]
 */
export function fmtNum(value, digits = 3) {
  if (!isNum(value)) return DASH;
  if (Number.isInteger(value)) return value.toLocaleString("en-US");
  const abs = Math.abs(value);
  const d = abs >= 1000 ? 0 : abs >= 100 ? 1 : digits;
  return value.toLocaleString("en-US", { minimumFractionDigits: 0, maximumFractionDigits: d });
}

/** @param {number | null | undefined} perSecond */
export function fmtRate(perSecond) {
  return isNum(perSecond) ? `${fmtNum(perSecond, 2)}/s` : DASH;
}

/**
 * Human duration from seconds: "850 ms", "12.3 s", "4m 05s", "2h 10m", "3d 4h".
 * @param {number | null | undefined} seconds
 */
export function fmtDuration(seconds) {
  if (!isNum(seconds)) return DASH;
  const s = Math.max(0, seconds);
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(Math.floor(s % 60)).padStart(2, "0")}s`;
  if (s < 86400)
    return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

/** @param {number | null | undefined} ms */
export function fmtMs(ms) {
  if (!isNum(ms)) return DASH;
  return ms < 1000 ? `${fmtNum(ms, 1)} ms` : fmtDuration(ms / 1000);
}

/**
 * "12 s ago" relative to `now` (ms since epoch).
 * @param {number | null | undefined} ts
 * @param {number} [now]
 */
export function fmtAgo(ts, now = Date.now()) {
  if (!isNum(ts)) return DASH;
  return `${fmtDuration((now - ts) / 1000)} ago`;
}

/** @param {number | null | undefined} ts */
export function fmtTime(ts) {
  if (!isNum(ts)) return DASH;
  const d = new Date(ts);
  const pad = (/** @type {number} */ n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** Short id for tables: first 8 characters. @param {string | number | null | undefined} id */
export function shortId(id) {
  if (id === null || id === undefined) return DASH;
  const s = String(id);
  return s.length > 10 ? `${s.slice(0, 8)}…` : s;
}
