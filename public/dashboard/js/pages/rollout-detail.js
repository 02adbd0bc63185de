// @ts-check
// One group: metadata, side-by-side comparison of two sequences, and every sequence's messages and
// tokens with mask shading and a per-token logprob heat map; beside them, the sequence's
// trajectory (agent envs, proxy sessions) as a step timeline.
import { api } from "../api.js";
import { h, pill, setChildren } from "../dom.js";
import { fmtInt, fmtNum, fmtTime } from "../format.js";
import { messageList } from "../messages.js";
import { card } from "../page.js";
import {
  compareColumn,
  completionText,
  sequenceAt,
  sequenceFacts,
  trajectoryTimeline,
} from "../sequence-view.js";
import { completionCount, tokenLegend, tokenStrip } from "../tokens.js";
import { GROUP_STATUS_TONE } from "./rollouts.js";

/**
 * The judge panel's record of a group (group_overrides.judge, written by judged envs), or null.
 * @param {import("../api.js").GroupDetail} detail
 * @returns {import("../api.js").JudgeReport | null}
 */
function judgeReportOf(detail) {
  const report = /** @type {Record<string, unknown> | null | undefined} */ (
    detail.payload.group_overrides
  )?.judge;
  if (
    !report ||
    typeof report !== "object" ||
    !("judges" in report) ||
    !Array.isArray(report.judges)
  )
    return null;
  return /** @type {import("../api.js").JudgeReport} */ (report);
}

/**
 * Per-judge scores (rows: judges, columns: sequences), the panel score, agreement and failures.
 * @param {import("../api.js").JudgeReport} report
 */
function judgePanel(report) {
  const n = report.panel.length;
  const failedBy = new Map(report.failures.map((f) => [f.judge, f]));
  const head = h(
    "tr",
    null,
    h("th", null, "judge"),
    Array.from({ length: n }, (_, i) => h("th", { class: "num" }, `seq ${i + 1}`)),
  );
  const rows = report.judges.map((name, j) =>
    h(
      "tr",
      { "data-judge": name },
      h(
        "td",
        null,
        name,
        report.calibrated.includes(name)
          ? h("span", { class: "muted small" }, " (calibrated)")
          : null,
      ),
      (report.scores[j] ?? []).map((s) =>
        h("td", { class: "num" }, s === null ? pill("failed", "bad") : fmtNum(s, 3)),
      ),
    ),
  );
  const panelRow = h(
    "tr",
    null,
    h("th", null, "panel (trimmed mean)"),
    report.panel.map((s) => h("th", { class: "num" }, s === null ? "–" : fmtNum(s, 3))),
  );
  return [
    h(
      "p",
      { class: "small", "data-testid": "judge-summary" },
      `${report.mode} · ${report.judges.length} judges · ${report.calls} calls · agreement (Kendall's tau) ${report.kendall_tau === null ? "–" : fmtNum(report.kendall_tau, 2)} · ${report.failures.length} failures`,
    ),
    h(
      "table",
      { class: "data-table", "data-testid": "judge-scores" },
      h("thead", null, head),
      h("tbody", null, rows, panelRow),
    ),
    failedBy.size > 0
      ? h(
          "ul",
          { class: "small" },
          report.failures.map((f) =>
            h(
              "li",
              null,
              h("strong", null, f.judge),
              f.answer === null ? " (whole group): " : ` (seq ${f.answer + 1}): `,
              f.reason,
            ),
          ),
        )
      : null,
  ];
}

/**
 * @param {import("../api.js").GroupDetail} detail
 * @param {number} i
 * @param {"text" | "ids"} mode
 * @param {import("../api.js").Trajectory | undefined} trajectory
 */
function sequenceBody(detail, i, mode, trajectory) {
  const seq = sequenceAt(detail, i);
  const messages = messageList(detail.payload.messages?.[i]);
  const tokens = h(
    "div",
    null,
    h("h4", { class: "sub-title" }, "Tokens"),
    tokenStrip(seq, { mode }),
  );
  return [
    sequenceFacts(detail, i),
    trajectory
      ? h(
          "div",
          { class: "seq-with-trajectory" },
          h(
            "div",
            { class: "seq-trajectory" },
            h("h4", { class: "sub-title" }, "Trajectory"),
            trajectoryTimeline(trajectory),
          ),
          h("div", { class: "seq-tokens" }, tokens),
        )
      : null,
    messages
      ? h("div", null, h("h4", { class: "sub-title" }, "Messages"), messages)
      : h(
          "div",
          null,
          h("h4", { class: "sub-title" }, "Completion"),
          h("pre", { class: "msg-content" }, completionText(seq)),
        ),
    trajectory ? null : tokens,
  ];
}

/** @type {import("../page.js").PageFactory} */
export function mountRolloutDetail(root, ctx) {
  const groupId = ctx.route.params[0] ?? "";
  setChildren(
    root,
    h("p", null, h("a", { href: "#/rollouts" }, "← All rollouts")),
    h("h1", { class: "page-title" }, "Group ", h("span", { class: "mono" }, groupId)),
    h("p", { class: "muted" }, "Loading group…"),
  );
  let loaded = false;

  return {
    title: `Group ${groupId}`,
    poll: false,
    async refresh({ run, signal }) {
      if (loaded) return;
      const [detail, trajectories] = await Promise.all([
        api.group(run, groupId, signal),
        // Groups without trajectories (most) answer an empty list; an older API, an error.
        api.trajectories(run, groupId, signal).catch(() => null),
      ]);
      loaded = true;
      render(detail, trajectories?.trajectories ?? []);
    },
  };

  /**
   * @param {import("../api.js").GroupDetail} detail
   * @param {import("../api.js").Trajectory[]} trajectories
   */
  function render(detail, trajectories) {
    const trajectoryOf = (/** @type {number} */ i) => trajectories.find((t) => t.sequence === i);
    const g = detail.group;
    const n = detail.payload.tokens.length;
    /** @type {"text" | "ids"} */
    let mode = detail.token_texts ? "text" : "ids";

    const meta = h(
      "dl",
      { class: "facts facts-wide", "data-testid": "group-meta" },
      [
        ["env", g.env_name ?? (g.env_id === null ? "–" : `env ${g.env_id}`)],
        ["status", pill(g.status, GROUP_STATUS_TONE[g.status] ?? "muted")],
        ["sequences", fmtInt(g.num_seqs)],
        ["tokens", fmtInt(g.total_tokens)],
        ["completion tokens", fmtInt(g.completion_tokens)],
        ["mean score", fmtNum(g.score_mean, 4)],
        ["policy version", fmtInt(g.policy_version)],
        ["step", g.step === null ? "–" : fmtInt(g.step)],
        ["batch", g.batch_id ?? "–"],
        ["created", fmtTime(g.created_at)],
      ].map(([k, v]) => h("div", null, h("dt", null, k), h("dd", { "data-field": String(k) }, v))),
    );
    const extra = [
      ["generation_params", detail.payload.generation_params],
      ["group_overrides", detail.payload.group_overrides],
    ].filter(([, v]) => v && Object.keys(/** @type {object} */ (v)).length > 0);

    // Comparison defaults to best vs worst score: the contrast GRPO learns from.
    const order = detail.payload.scores.map((s, i) => ({ s, i })).sort((a, b) => b.s - a.s);
    let left = order[0]?.i ?? 0;
    let right = order.at(-1)?.i ?? 0;
    const option = (/** @type {number} */ i) =>
      h(
        "option",
        { value: String(i) },
        `Sequence ${i + 1} (score ${fmtNum(detail.payload.scores[i] ?? null, 3)})`,
      );
    const leftSelect = h(
      "select",
      { "aria-label": "Left sequence" },
      Array.from({ length: n }, (_, i) => option(i)),
    );
    const rightSelect = h(
      "select",
      { "aria-label": "Right sequence" },
      Array.from({ length: n }, (_, i) => option(i)),
    );
    leftSelect.value = String(left);
    rightSelect.value = String(right);
    const leftBody = h("div", { class: "compare-body", "data-testid": "compare-left" });
    const rightBody = h("div", { class: "compare-body", "data-testid": "compare-right" });
    const renderCompare = () => {
      setChildren(leftBody, compareColumn(detail, left, trajectoryOf(left)));
      setChildren(rightBody, compareColumn(detail, right, trajectoryOf(right)));
    };
    leftSelect.addEventListener("change", () => {
      left = Number(leftSelect.value);
      renderCompare();
    });
    rightSelect.addEventListener("change", () => {
      right = Number(rightSelect.value);
      renderCompare();
    });
    renderCompare();

    const sequences = h("div", { class: "sequences" });
    const renderSequences = () => {
      setChildren(
        sequences,
        // Best score first, and open: the sequence a reader wants to see before the others.
        order.map(({ i }, rank) => {
          const body = h("div", { class: "seq-body" });
          const details = h(
            "details",
            { class: "seq", "data-seq": i, "data-rank": rank, open: rank === 0 },
            h(
              "summary",
              null,
              h("strong", null, `Sequence ${i + 1}`),
              ` · score ${fmtNum(detail.payload.scores[i] ?? null, 4)} · ${fmtInt(detail.payload.tokens[i]?.length ?? 0)} tokens (${fmtInt(completionCount(detail.payload.masks?.[i]))} completion)`,
            ),
            body,
          );
          // Render lazily: a group can hold 16 × 32k tokens.
          const fill = () => {
            if (details.open && !body.hasChildNodes())
              setChildren(body, sequenceBody(detail, i, mode, trajectoryOf(i)));
          };
          details.addEventListener("toggle", fill);
          fill();
          return details;
        }),
      );
    };
    const modeButtons = detail.token_texts
      ? h(
          "div",
          { class: "segmented", role: "group", "aria-label": "Token display" },
          ["text", "ids"].map((m) =>
            h(
              "button",
              {
                type: "button",
                class: "btn btn-small",
                "aria-pressed": String(m === mode),
                "data-mode": m,
                onclick: (/** @type {MouseEvent} */ e) => {
                  mode = m === "text" ? "text" : "ids";
                  for (const b of /** @type {HTMLElement} */ (e.currentTarget).parentElement
                    ?.children ?? []) {
                    b.setAttribute("aria-pressed", String(b.getAttribute("data-mode") === mode));
                  }
                  renderSequences();
                },
              },
              m === "text" ? "Decoded text" : "Token ids",
            ),
          ),
        )
      : h(
          "p",
          { class: "muted small" },
          "Tokens shown as ids (the server sent no decoded token texts).",
        );
    renderSequences();

    setChildren(
      root,
      h("p", null, h("a", { href: "#/rollouts" }, "← All rollouts")),
      h(
        "h1",
        { class: "page-title" },
        "Group ",
        h("span", { class: "mono", "data-field": "group_id" }, g.id),
      ),
      card("Summary", [
        meta,
        extra.map(([k, v]) =>
          h(
            "details",
            { class: "json-block" },
            h("summary", null, String(k)),
            h("pre", null, JSON.stringify(v, null, 2)),
          ),
        ),
      ]),
      judgeReportOf(detail)
        ? card(
            "Judges",
            judgePanel(/** @type {import("../api.js").JudgeReport} */ (judgeReportOf(detail))),
          )
        : null,
      n > 1
        ? card("Compare sequences", [
            h(
              "div",
              { class: "compare", "data-testid": "compare" },
              h("div", { class: "compare-col" }, leftSelect, leftBody),
              h("div", { class: "compare-col" }, rightSelect, rightBody),
            ),
          ])
        : null,
      card(`Sequences (${n})`, [
        h("div", { class: "toolbar" }, modeButtons, tokenLegend()),
        sequences,
      ]),
    );
  }
}
