// @ts-check
// One group: metadata, side-by-side comparison of two sequences, and every sequence's messages and
// tokens with mask shading and a per-token logprob heat map; beside them, the sequence's
// trajectory (agent envs, proxy sessions) as a step timeline.
import { api } from "../api.js";
import { h, pill, setChildren } from "../dom.js";
import { fmtInt, fmtNum, fmtTime } from "../format.js";
import { contentText, messageList } from "../messages.js";
import { card } from "../page.js";
import { completionCount, MASKED, tokenLegend, tokenStrip } from "../tokens.js";
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
 * @returns {import("../tokens.js").TokenSequence}
 */
function sequenceAt(detail, i) {
  const p = detail.payload;
  return {
    tokens: p.tokens[i] ?? [],
    masks: p.masks?.[i] ?? null,
    logprobs: p.inference_logprobs?.[i] ?? null,
    advantages: p.advantages?.[i] ?? null,
    texts: detail.token_texts?.[i] ?? null,
  };
}

/**
 * Completion as text: from token_texts when the server decoded them, else as token ids.
 * @param {import("../tokens.js").TokenSequence} seq
 */
function completionText(seq) {
  const parts = [];
  for (let i = 0; i < seq.tokens.length; i++) {
    if (seq.masks?.[i] === MASKED) continue;
    parts.push(seq.texts ? (seq.texts[i] ?? "") : String(seq.tokens[i]));
  }
  return seq.texts ? parts.join("") : parts.join(" ");
}

/** @param {number[] | null} values */
function mean(values) {
  if (!values || values.length === 0) return null;
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/**
 * Key facts of one sequence, shared by the list and the comparison.
 * @param {import("../api.js").GroupDetail} detail
 * @param {number} i
 */
function sequenceFacts(detail, i) {
  const seq = sequenceAt(detail, i);
  const completion = completionCount(seq.masks);
  const facts = [
    ["score", fmtNum(detail.payload.scores[i] ?? null, 4)],
    ["tokens", fmtInt(seq.tokens.length)],
    ["completion", fmtInt(completion)],
  ];
  const completionLogprobs =
    seq.logprobs?.filter((lp, j) => seq.masks?.[j] !== MASKED && lp <= 0) ?? null;
  const meanLogprob = mean(completionLogprobs);
  if (meanLogprob !== null) facts.push(["mean logprob", fmtNum(meanLogprob, 3)]);
  const advantage = mean(seq.advantages);
  if (advantage !== null) facts.push(["mean advantage", fmtNum(advantage, 3)]);
  const override = detail.payload.overrides?.[i];
  if (override && Object.keys(override).length) facts.push(["overrides", JSON.stringify(override)]);
  return h(
    "dl",
    { class: "facts", "data-seq": i },
    facts.map(([k, v]) => [h("dt", null, k), h("dd", { "data-field": k }, v)]),
  );
}

/** @param {unknown} value */
function shortJson(value) {
  const text = JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * A trajectory as a step timeline: each step's time from the first, thought, tool call with its
 * result or error and latency, and what the agent observed.
 * @param {import("../api.js").Trajectory} trajectory
 */
export function trajectoryTimeline(trajectory) {
  const start = trajectory.steps[0]?.timestamp ?? 0;
  const facts = [
    ["success", trajectory.success === null ? "–" : String(trajectory.success)],
    ["judge score", fmtNum(trajectory.judge_score, 3)],
    ["steps", fmtInt(trajectory.steps.length)],
    ["tokens", fmtInt(trajectory.token_count)],
    ["wall time", `${fmtNum(trajectory.wall_time_ms / 1000, 2)} s`],
    ["source", trajectory.source],
  ];
  return h(
    "div",
    { class: "trajectory", "data-testid": "trajectory" },
    h("p", { class: "small" }, h("strong", null, "Task: "), trajectory.task),
    h(
      "dl",
      { class: "facts" },
      facts.map(([k, v]) => [h("dt", null, k), h("dd", { "data-field": `trajectory_${k}` }, v)]),
    ),
    h(
      "ol",
      { class: "timeline" },
      trajectory.steps.map((step, n) => {
        const call = step.tool_call;
        return h(
          "li",
          { class: "timeline-step", "data-step": n },
          h(
            "div",
            { class: "timeline-time mono small" },
            `+${fmtNum((step.timestamp - start) / 1000, 2)} s`,
          ),
          step.thought ? h("div", { class: "timeline-thought" }, step.thought) : null,
          call
            ? h(
                "div",
                { class: "timeline-call mono small" },
                pill(call.name, call.error ? "bad" : "ok"),
                ` ${shortJson(call.parameters)}`,
                call.latency_ms === null ? "" : ` · ${fmtInt(call.latency_ms)} ms`,
                call.error ? h("div", { class: "timeline-error" }, `error: ${call.error}`) : null,
              )
            : null,
          step.observation
            ? h("div", { class: "timeline-observation small muted" }, `→ ${step.observation}`)
            : null,
        );
      }),
    ),
    trajectory.final_response
      ? h(
          "div",
          null,
          h("h4", { class: "sub-title" }, "Final response"),
          h("pre", { class: "msg-content" }, trajectory.final_response),
        )
      : null,
  );
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

/**
 * @param {import("../api.js").GroupDetail} detail
 * @param {number} i
 */
function compareColumn(detail, i) {
  const seq = sequenceAt(detail, i);
  const messages = detail.payload.messages?.[i];
  const lastAssistant = [...(messages ?? [])].reverse().find((m) => m && m.role === "assistant");
  return [
    sequenceFacts(detail, i),
    h(
      "pre",
      { class: "msg-content compare-text", "data-field": "compare_text" },
      lastAssistant ? contentText(lastAssistant.content) : completionText(seq),
    ),
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
      setChildren(leftBody, compareColumn(detail, left));
      setChildren(rightBody, compareColumn(detail, right));
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
        Array.from({ length: n }, (_, i) => {
          const body = h("div", { class: "seq-body" });
          const details = h(
            "details",
            { class: "seq", "data-seq": i, open: i === 0 },
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
