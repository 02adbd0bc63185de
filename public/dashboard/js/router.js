// @ts-check
// Hash routes: #/overview, #/curves?x=step|policy_version, #/envs, #/rollouts?filters, #/rollouts/<groupId>, #/batches.

/**
 * @typedef {{name: "overview" | "curves" | "envs" | "rollouts" | "rollout" | "batches" | "unknown",
 *   params: string[], query: URLSearchParams, path: string}} Route
 */

/**
 * @param {string} hash location.hash, e.g. "#/rollouts/abc?x=1"
 * @returns {Route}
 */
export function parseRoute(hash) {
  const raw = hash.replace(/^#\/?/, "");
  const queryStart = raw.indexOf("?");
  const path = queryStart === -1 ? raw : raw.slice(0, queryStart);
  const query = new URLSearchParams(queryStart === -1 ? "" : raw.slice(queryStart + 1));
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const [head = "overview", ...rest] = parts;
  if (head === "rollouts" && rest.length > 0) {
    return { name: "rollout", params: rest, query, path };
  }
  if (
    head === "overview" ||
    head === "curves" ||
    head === "envs" ||
    head === "rollouts" ||
    head === "batches"
  ) {
    return { name: head, params: rest, query, path };
  }
  return { name: "unknown", params: parts, query, path };
}

/**
 * @param {string} path e.g. "rollouts"
 * @param {Record<string, string | number | null | undefined>} [params]
 */
export function hashFor(path, params = {}) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") search.set(key, String(value));
  }
  const q = search.toString();
  return `#/${path}${q ? `?${q}` : ""}`;
}

/** @param {string | number} groupId */
export function groupHash(groupId) {
  return `#/rollouts/${encodeURIComponent(String(groupId))}`;
}
