// @ts-check
// Batches: leased and acknowledged batches with their manifests (groups, envs, policy versions).
import { api } from "../api.js";
import { h, pill, setChildren, setText } from "../dom.js";
import { fmtAgo, fmtInt, fmtTime, shortId } from "../format.js";
import { card, changeTracker, scroller, table, td } from "../page.js";
import { groupHash } from "../router.js";

const PAGE_SIZE = 50;
const COLUMNS = 10;

/**
 * Policy versions between the oldest group's sampling and the batch's formation (null if unknown).
 * @param {import("../api.js").BatchInfo} b
 */
function measuredStaleness(b) {
  const versions = b.groups.map((g) => g.policy_version).filter((v) => v !== null);
  if (b.policy_version_at_formation === null || versions.length === 0) return null;
  return b.policy_version_at_formation - Math.min(...versions);
}

/**
 * @param {import("../api.js").BatchInfo} b
 * @param {Map<number, string>} envNames
 */
function manifest(b, envNames) {
  const t = table(`Manifest of batch ${b.batch_id}`, [
    "Group",
    "Env",
    { label: "Policy version", numeric: true },
    {
      label: "Staleness",
      numeric: true,
      title: "policy version at formation − group's policy version",
    },
    { label: "Sequences", numeric: true },
    {
      label: "Source",
      title: "online: delivered once; replay: taken again from the replay buffer",
    },
  ]);
  setChildren(
    t.tbody,
    b.groups.map((g) =>
      h(
        "tr",
        { "data-group-id": g.id, "data-replayed": String(g.replayed) },
        td(h("a", { href: groupHash(g.id), class: "mono", title: g.id }, shortId(g.id))),
        td(g.env_id === null ? "–" : (envNames.get(g.env_id) ?? `env ${g.env_id}`)),
        td(fmtInt(g.policy_version), { numeric: true }),
        td(
          b.policy_version_at_formation === null || g.policy_version === null
            ? "–"
            : fmtInt(b.policy_version_at_formation - g.policy_version),
          { numeric: true, field: "staleness" },
        ),
        td(fmtInt(g.num_seqs), { numeric: true }),
        td(g.replayed ? pill("replay", "info") : "online", { field: "source" }),
      ),
    ),
  );
  return t.el;
}

/**
 * @param {import("../api.js").BatchInfo} b
 * @param {Map<number, string>} envNames
 * @param {Set<import("../api.js").Id>} expanded batch ids whose manifest is open; survives re-renders
 * @param {number} now
 */
function batchRows(b, envNames, expanded, now) {
  const manifestId = `manifest-${b.batch_id}`;
  const open = expanded.has(b.batch_id);
  const manifestRow = h(
    "tr",
    { class: "manifest-row", id: manifestId, hidden: !open },
    h("td", { colspan: COLUMNS }, manifest(b, envNames)),
  );
  const staleness = measuredStaleness(b);
  const envs = [...new Set(b.groups.map((g) => g.env_id))]
    .map((id) => (id === null ? "–" : (envNames.get(id) ?? `env ${id}`)))
    .join(", ");
  const toggle = h(
    "button",
    {
      type: "button",
      class: "btn btn-small",
      "aria-expanded": String(open),
      "aria-controls": manifestId,
      onclick: () => {
        const nowOpen = !expanded.has(b.batch_id);
        if (nowOpen) expanded.add(b.batch_id);
        else expanded.delete(b.batch_id);
        manifestRow.hidden = !nowOpen;
        toggle.setAttribute("aria-expanded", String(nowOpen));
      },
    },
    "Manifest",
  );
  const leaseInfo =
    b.status === "acked"
      ? `acked ${fmtAgo(b.acked_at, now)}`
      : b.lease_expires_at === null
        ? "–"
        : b.lease_expires_at > now
          ? `expires in ${fmtAgo(now, b.lease_expires_at).replace(" ago", "")}`
          : "lease expired";
  return [
    h(
      "tr",
      { "data-batch-id": b.batch_id },
      td(toggle),
      td(h("span", { class: "mono", title: b.batch_id }, shortId(b.batch_id)), {
        field: "batch_id",
      }),
      td(fmtInt(b.step), { numeric: true, field: "step" }),
      td(pill(b.status, b.status === "acked" ? "ok" : "warn"), { field: "status" }),
      td(
        b.replayed_groups > 0
          ? [
              fmtInt(b.num_groups),
              h("div", { class: "muted small" }, `${fmtInt(b.replayed_groups)} replayed`),
            ]
          : fmtInt(b.num_groups),
        {
          numeric: true,
          field: "num_groups",
          title:
            b.replayed_groups > 0
              ? `${b.replayed_groups} of ${b.num_groups} groups were replays from the replay buffer`
              : "every group online (delivered once)",
        },
      ),
      td(fmtInt(b.num_seqs), { numeric: true, field: "num_seqs" }),
      td(envs, { field: "envs" }),
      td(fmtInt(b.policy_version_at_formation), {
        numeric: true,
        field: "policy_version_at_formation",
      }),
      td(staleness === null ? "–" : fmtInt(staleness), {
        numeric: true,
        field: "staleness",
        title:
          b.max_staleness === null
            ? "the lease set no max_staleness"
            : `the lease allowed at most ${b.max_staleness}`,
      }),
      td(
        [
          h("div", { title: fmtTime(b.created_at) }, fmtAgo(b.created_at, now)),
          h("div", { class: "muted small" }, leaseInfo),
        ],
        {
          field: "created_at",
        },
      ),
    ),
    manifestRow,
  ];
}

/** @type {import("../page.js").PageFactory} */
export function mountBatches(root) {
  const batches = table("Batches", [
    "",
    "Batch",
    { label: "Step", numeric: true },
    "Status",
    { label: "Groups", numeric: true },
    { label: "Sequences", numeric: true },
    "Envs",
    { label: "Policy v.", numeric: true, title: "Policy version when the batch was formed" },
    {
      label: "Staleness",
      numeric: true,
      title: "Policy versions between the oldest group's sampling and the batch's formation",
    },
    "Created / lease",
  ]);
  batches.el.dataset.testid = "batches-table";
  const pageLabel = h("span", { class: "muted" }, "Page 1");
  const prev = h("button", { type: "button", class: "btn", disabled: true }, "← Newer");
  const next = h("button", { type: "button", class: "btn", disabled: true }, "Older →");
  setChildren(
    root,
    h("h1", { class: "page-title" }, "Batches"),
    card("Delivered and leased batches", [
      scroller(batches.el, "Batches"),
      h("nav", { class: "pager", "aria-label": "Pagination" }, prev, pageLabel, next),
    ]),
  );

  /** @type {(import("../api.js").Id | null)[]} */
  const cursors = [null];
  let pageIndex = 0;
  /** @type {import("../api.js").Id | null} */
  let nextCursor = null;
  /** @type {Set<import("../api.js").Id>} */
  const expanded = new Set();
  /** @type {Map<number, string>} */
  const envNames = new Map();
  const changed = changeTracker();
  /** @type {import("../page.js").PageContext | null} */
  let lastCtx = null;

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

  return {
    title: "Batches",
    poll: true,
    async refresh(ctx) {
      lastCtx = ctx;
      const [page, stats] = await Promise.all([
        api.batches(ctx.run, { limit: PAGE_SIZE, cursor: cursors[pageIndex] ?? null }, ctx.signal),
        envNames.size === 0 || ctx.tick % 10 === 0 ? api.stats(ctx.run, ctx.signal) : null,
      ]);
      for (const e of stats?.envs ?? []) envNames.set(e.env_id, e.name);
      nextCursor = page.next_cursor;
      prev.disabled = pageIndex === 0;
      next.disabled = !nextCursor;
      setText(pageLabel, `Page ${pageIndex + 1}`);
      if (!changed([pageIndex, page.batches, [...envNames]])) return;
      const now = Date.now();
      setChildren(
        batches.tbody,
        page.batches.length === 0
          ? h(
              "tr",
              null,
              h(
                "td",
                { colspan: COLUMNS, class: "muted" },
                "No batches yet. Trainers lease them with POST /v1/runs/{run}/batches/lease or GET /batch.",
              ),
            )
          : page.batches.map((b) => batchRows(b, envNames, expanded, now)),
      );
    },
  };
}
