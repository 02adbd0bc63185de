// @ts-check
// Rollouts explorer: filterable, cursor-paginated table of scored groups.
import { api } from "../api.js";
import { h, pill, setChildren, setText } from "../dom.js";
import { fmtAgo, fmtInt, fmtNum, fmtTime, shortId } from "../format.js";
import { card, changeTracker, scroller, table, td } from "../page.js";
import { groupHash, hashFor } from "../router.js";

const PAGE_SIZE = 50;
const FILTER_KEYS = /** @type {const} */ ([
  "env_id",
  "status",
  "min_score",
  "max_score",
  "policy_version",
  "window",
]);
/** @type {Record<string, string>} */
const WINDOWS = {
  "": "Any time",
  5: "Last 5 minutes",
  15: "Last 15 minutes",
  60: "Last hour",
  1440: "Last 24 hours",
};
const STATUSES = ["buffered", "queued", "leased", "delivered"];

/** @type {Record<string, "info" | "warn" | "ok" | "muted">} */
export const GROUP_STATUS_TONE = {
  buffered: "muted",
  queued: "info",
  leased: "warn",
  delivered: "ok",
};

/**
 * @param {string} label
 * @param {HTMLElement} control
 */
function field(label, control) {
  return h("label", { class: "field" }, h("span", null, label), control);
}

/**
 * @param {import("../api.js").GroupMeta} g
 * @param {number} now
 */
function groupRow(g, now) {
  return h(
    "tr",
    { "data-group-id": g.id },
    td(h("a", { href: groupHash(g.id), class: "mono", title: g.id }, shortId(g.id)), {
      field: "id",
    }),
    td(g.env_name ?? (g.env_id === null ? "–" : `env ${g.env_id}`), { field: "env" }),
    td(pill(g.status, GROUP_STATUS_TONE[g.status] ?? "muted"), { field: "status" }),
    td(fmtInt(g.num_seqs), { numeric: true, field: "num_seqs" }),
    td(fmtInt(g.total_tokens), { numeric: true, field: "total_tokens" }),
    td(fmtInt(g.completion_tokens), { numeric: true, field: "completion_tokens" }),
    td(fmtNum(g.score_mean), { numeric: true, field: "score_mean" }),
    td(g.score_min === null ? "–" : `${fmtNum(g.score_min)} … ${fmtNum(g.score_max)}`, {
      numeric: true,
      field: "score_range",
    }),
    td(fmtInt(g.policy_version), { numeric: true, field: "policy_version" }),
    td(g.step === null ? "–" : fmtInt(g.step), { numeric: true, field: "step" }),
    td(
      h(
        "time",
        { datetime: new Date(g.created_at).toISOString(), title: fmtTime(g.created_at) },
        fmtAgo(g.created_at, now),
      ),
      {
        field: "created_at",
      },
    ),
  );
}

/** @type {import("../page.js").PageFactory} */
export function mountRollouts(root, ctx) {
  const q = ctx.route.query;
  const envSelect = h("select", { name: "env_id" }, h("option", { value: "" }, "All envs"));
  const statusSelect = h(
    "select",
    { name: "status" },
    h("option", { value: "" }, "Any status"),
    STATUSES.map((s) => h("option", { value: s }, s)),
  );
  const windowSelect = h(
    "select",
    { name: "window" },
    Object.entries(WINDOWS)
      .sort(([a], [b]) => Number(a) - Number(b))
      .map(([value, label]) => h("option", { value }, label)),
  );
  /** @param {string} name @param {string} step */
  const numberInput = (name, step) =>
    h("input", { type: "number", name, step, inputmode: "decimal", value: q.get(name) ?? "" });
  const form = h(
    "form",
    { class: "filters", "aria-label": "Filter groups" },
    field("Env", envSelect),
    field("Status", statusSelect),
    field("Min score", numberInput("min_score", "any")),
    field("Max score", numberInput("max_score", "any")),
    field("Policy version", numberInput("policy_version", "1")),
    field("Time window", windowSelect),
    h(
      "div",
      { class: "filter-actions" },
      h("button", { type: "submit", class: "btn btn-primary" }, "Apply filters"),
      h("a", { class: "btn btn-ghost", href: "#/rollouts" }, "Reset"),
    ),
  );
  statusSelect.value = q.get("status") ?? "";
  windowSelect.value = q.get("window") ?? "";
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    /** @type {Record<string, string>} */
    const params = {};
    for (const key of FILTER_KEYS) params[key] = String(data.get(key) ?? "").trim();
    params.limit = q.get("limit") ?? "";
    location.hash = hashFor("rollouts", params);
  });

  const groups = table("Scored groups", [
    "Group",
    "Env",
    "Status",
    { label: "Seqs", numeric: true },
    { label: "Tokens", numeric: true },
    { label: "Completion", numeric: true },
    { label: "Mean score", numeric: true },
    { label: "Score range", numeric: true },
    { label: "Policy v.", numeric: true },
    { label: "Step", numeric: true },
    { label: "Created", numeric: false },
  ]);
  groups.el.dataset.testid = "groups-table";
  const pageLabel = h("span", { class: "muted", "data-field": "page" }, "Page 1");
  const prev = h("button", { type: "button", class: "btn", disabled: true }, "← Previous");
  const next = h("button", { type: "button", class: "btn", disabled: true }, "Next →");
  const activeFilters = h("p", { class: "muted small", "data-field": "active_filters" });

  setChildren(
    root,
    h("h1", { class: "page-title" }, "Rollouts"),
    card("Filters", [form, activeFilters]),
    card("Groups", [
      scroller(groups.el, "Scored groups"),
      h("nav", { class: "pager", "aria-label": "Pagination" }, prev, pageLabel, next),
    ]),
  );

  // Page size comes from the link (#/rollouts?limit=20) so a view can be shared; the API caps it.
  const pageSize = Math.min(200, Math.max(1, Number(q.get("limit")) || PAGE_SIZE));
  /** @type {(import("../api.js").Id | null)[]} cursors[i] fetches page i */
  const cursors = [null];
  let pageIndex = 0;
  /** @type {import("../api.js").Id | null} */
  let nextCursor = null;
  let envsLoaded = false;
  const rowsChanged = changeTracker();
  const filters = () => {
    const windowMinutes = Number(q.get("window") ?? "");
    return {
      env_id: q.get("env_id"),
      status: q.get("status"),
      min_score: q.get("min_score"),
      max_score: q.get("max_score"),
      policy_version: q.get("policy_version"),
      since: windowMinutes > 0 ? Date.now() - windowMinutes * 60_000 : q.get("since"),
      until: q.get("until"),
      limit: pageSize,
    };
  };
  const described = FILTER_KEYS.filter((k) => q.get(k)).map((k) =>
    k === "window"
      ? (WINDOWS[q.get(k) ?? ""] ?? "")
      : `${k.replace("_", " ")} ${k.startsWith("max") ? "≤" : k.startsWith("min") ? "≥" : "="} ${q.get(k)}`,
  );
  setText(
    activeFilters,
    described.length ? `Showing: ${described.join(", ")}` : "Showing all groups.",
  );

  /** @type {import("../page.js").PageContext | null} */
  let lastCtx = null;
  const load = async (/** @type {import("../page.js").PageContext} */ c) => {
    lastCtx = c;
    if (!envsLoaded || c.tick % 10 === 0) {
      const stats = await api.stats(c.run, c.signal);
      const selected = q.get("env_id") ?? "";
      setChildren(
        envSelect,
        h("option", { value: "" }, "All envs"),
        stats.envs.map((e) => h("option", { value: String(e.env_id) }, `${e.name} (#${e.env_id})`)),
      );
      envSelect.value = selected;
      envsLoaded = true;
    }
    const page = await api.groups(
      c.run,
      { ...filters(), cursor: cursors[pageIndex] ?? null },
      c.signal,
    );
    nextCursor = page.next_cursor;
    prev.disabled = pageIndex === 0;
    next.disabled = !nextCursor;
    setText(pageLabel, `Page ${pageIndex + 1}`);
    if (rowsChanged([pageIndex, page.groups])) {
      const now = Date.now();
      setChildren(
        groups.tbody,
        page.groups.length === 0
          ? h(
              "tr",
              null,
              h("td", { colspan: 11, class: "muted" }, "No groups match these filters."),
            )
          : page.groups.map((g) => groupRow(g, now)),
      );
    }
  };
  prev.addEventListener("click", () => {
    if (pageIndex === 0 || !lastCtx) return;
    pageIndex -= 1;
    lastCtx.refreshNow();
  });
  next.addEventListener("click", () => {
    if (!nextCursor || !lastCtx) return;
    cursors[pageIndex + 1] = nextCursor;
    pageIndex += 1;
    lastCtx.refreshNow();
  });

  return { title: "Rollouts", poll: true, refresh: load };
}
