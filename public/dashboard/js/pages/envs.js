// @ts-check
// Envs: every registered environment with liveness, scheduling weights, work counters, the score
// distribution of its latest batch and evaluation results over steps (both from the metrics store),
// and the tasks contributors registered with what they submitted.
import { api } from "../api.js";
import { createChart } from "../charts.js";
import { h, pill, setChildren, setText } from "../dom.js";
import { fmtDuration, fmtInt, fmtNum, fmtTime } from "../format.js";
import { card, changeTracker, scroller, table, td } from "../page.js";
import { hashFor } from "../router.js";
import { tasksCard } from "./tasks-card.js";

// Histograms and evals change slowly; fetch them every third poll (6 s).
const DETAIL_EVERY_TICKS = 3;

/** @type {Record<string, "ok" | "warn" | "bad">} */
const STATUS_TONE = { active: "ok", stale: "warn", disconnected: "bad" };
/** What an env worker (queue path) says it is doing; envs run elsewhere report nothing. */
/** @type {Record<string, "ok" | "warn" | "bad" | "muted">} */
const WORKER_TONE = {
  running: "ok",
  paused: "warn",
  evaluating: "warn",
  waiting_for_trainer: "muted",
  stopped: "bad",
};

/**
 * Pause/resume and weight controls (PATCH /v1/runs/{run}/envs/{id}); needs a trainer or admin
 * token. The next poll shows the result; an error is shown next to the controls.
 * @param {string} run
 * @param {import("../api.js").EnvStats} env
 */
function envControls(run, env) {
  const message = h("div", { class: "muted small", "data-field": "control_message" });
  /** @param {import("../api.js").EnvControlRequest} change */
  const apply = async (change) => {
    setText(message, "…");
    try {
      const after = await api.updateEnv(run, env.env_id, change);
      setText(message, after.paused ? "paused" : `weight ${fmtNum(after.weight)}`);
    } catch (err) {
      setText(message, err instanceof Error ? err.message : String(err));
    }
  };
  // A prompt, not an inline input: the table is redrawn on every poll.
  const askWeight = () => {
    const answer = window.prompt(`Weight of ${env.name} (> 0)`, String(env.weight));
    if (answer === null) return;
    const value = Number(answer);
    if (!Number.isFinite(value) || value <= 0) {
      setText(message, "the weight must be a number above 0");
      return;
    }
    void apply({ weight: value });
  };
  return [
    h(
      "button",
      {
        type: "button",
        "data-action": env.paused ? "resume" : "pause",
        onclick: () => apply({ paused: !env.paused }),
      },
      env.paused ? "Resume" : "Pause",
    ),
    " ",
    h("button", { type: "button", "data-action": "set-weight", onclick: askWeight }, "Weight…"),
    message,
  ];
}

/**
 * @param {string} run
 * @param {import("../api.js").EnvStats} env
 */
function envRow(run, env) {
  const heartbeat =
    env.heartbeat_age_s === null
      ? "no heartbeat"
      : `heartbeat ${fmtDuration(env.heartbeat_age_s)} ago`;
  return h(
    "tr",
    { "data-env-id": env.env_id },
    td(
      h(
        "a",
        { href: `#env-${env.env_id}`, class: "env-name" },
        env.name,
        h("span", { class: "muted small" }, ` #${env.env_id}`),
      ),
      { field: "name" },
    ),
    td(
      [
        pill(env.status, STATUS_TONE[env.status] ?? "muted"),
        env.paused ? h("span", { "data-field": "paused" }, " ", pill("paused", "warn")) : null,
        env.worker_status === null
          ? null
          : h(
              "span",
              { "data-field": "worker_status", title: "reported by the env's worker" },
              " ",
              pill(
                env.worker_status.replaceAll("_", " "),
                WORKER_TONE[env.worker_status] ?? "muted",
              ),
            ),
        h("div", { class: "muted small" }, heartbeat),
      ],
      {
        field: "status",
      },
    ),
    td(fmtNum(env.weight), { numeric: true, field: "weight" }),
    td(env.min_batch_allocation === null ? "–" : fmtNum(env.min_batch_allocation), {
      numeric: true,
      field: "min_batch_allocation",
    }),
    td(fmtInt(env.group_size), { numeric: true, field: "group_size" }),
    td(fmtInt(env.items_in_flight), { numeric: true, field: "items_in_flight" }),
    td(fmtInt(env.items_succeeded), { numeric: true, field: "items_succeeded" }),
    td(fmtInt(env.items_failed), { numeric: true, field: "items_failed" }),
    td(fmtInt(env.groups_submitted), { numeric: true, field: "groups_submitted" }),
    td(fmtInt(env.sequences_submitted), { numeric: true, field: "sequences_submitted" }),
    td(fmtNum(env.mean_score), { numeric: true, field: "mean_score" }),
    td(fmtNum(env.mean_completion_tokens, 1), { numeric: true, field: "mean_completion_tokens" }),
    td(envControls(run, env), { field: "controls" }),
  );
}

/**
 * Per-env detail card: histogram + evals. Charts are created once and updated in place.
 * @param {import("../api.js").EnvStats} env
 */
function envDetail(env) {
  const histogramEl = h("div", {
    class: "chart",
    role: "img",
    "aria-label": `Score histogram for ${env.name}`,
  });
  const evalsEl = h("div", {
    class: "chart",
    role: "img",
    "aria-label": `Evaluation results for ${env.name}`,
  });
  const histogramNote = h("p", { class: "muted small", "data-field": "score_samples" });
  const evalsNote = h("p", { class: "muted small", "data-field": "evals_note" });
  const evalTable = table(`Latest evaluation of ${env.name}`, [
    "Metric",
    { label: "Value", numeric: true },
  ]);
  const el = h(
    "section",
    { class: "card env-card", id: `env-${env.env_id}`, "data-env-id": env.env_id, tabindex: -1 },
    h(
      "h2",
      { class: "card-title" },
      h("span", { "data-field": "title" }, env.name),
      " ",
      h("a", { class: "small", href: hashFor("rollouts", { env_id: env.env_id }) }, "Rollouts →"),
    ),
    h(
      "div",
      { class: "chart-grid" },
      h(
        "figure",
        null,
        h("figcaption", null, "Score distribution (latest batch)"),
        histogramEl,
        histogramNote,
      ),
      h(
        "figure",
        null,
        h("figcaption", null, "Evaluation results by step"),
        evalsEl,
        evalsNote,
        evalTable.el,
      ),
    ),
  );
  /** @type {import("../charts.js").Chart | null} */
  let histogram = null;
  /** @type {import("../charts.js").Chart | null} */
  let evalsChart = null;
  let metricKey = "";
  const evalsChanged = changeTracker();
  return {
    el,
    /**
     * @param {import("../api.js").ScoreHistogram} scores
     * @param {import("../api.js").EvalResults} evals
     */
    update(scores, evals) {
      histogram ??= createChart(histogramEl, {
        series: [{ label: "sequences", color: "#2563eb", format: (v) => fmtInt(v) }],
        time: false,
        bars: true,
        xLabel: "score",
        height: 180,
      });
      histogram.update([
        scores.bins.map((b) => (b.lo + b.hi) / 2),
        scores.bins.map((b) => b.count),
      ]);
      setText(
        histogramNote,
        scores.step === null
          ? "No batch with this env's groups formed yet."
          : `${fmtInt(scores.samples)} sequences in the batch of step ${fmtInt(scores.step)}`,
      );

      if (!evalsChanged(evals)) return;
      const rows = [...evals.evals].sort((a, b) => a.step - b.step);
      const names = [...new Set(rows.flatMap((r) => Object.keys(r.metrics)))].sort();
      const key = names.join("\u0000");
      if (key !== metricKey) {
        evalsChart?.destroy();
        evalsChart = null;
        metricKey = key;
      }
      if (names.length > 0) {
        evalsChart ??= createChart(evalsEl, {
          series: names.map((label) => ({ label })),
          time: false,
          xLabel: "step",
          height: 180,
        });
        evalsChart.update([
          rows.map((r) => r.step),
          ...names.map((n) => rows.map((r) => r.metrics[n] ?? null)),
        ]);
      }
      evalsEl.hidden = names.length === 0;
      const latest = rows.at(-1);
      setText(
        evalsNote,
        latest
          ? `${rows.length} evaluations; latest at step ${fmtInt(latest.step)} (${fmtTime(latest.created_at)})`
          : "No evaluations reported yet.",
      );
      evalTable.el.hidden = !latest;
      setChildren(
        evalTable.tbody,
        Object.entries(latest?.metrics ?? {}).map(([name, value]) =>
          h("tr", null, td(name), td(fmtNum(value, 4), { numeric: true, field: name })),
        ),
      );
    },
    /** @param {string} name */
    rename(name) {
      setText(el.querySelector("[data-field=title]"), name);
    },
    destroy() {
      histogram?.destroy();
      evalsChart?.destroy();
    },
  };
}

/** @type {import("../page.js").PageFactory} */
export function mountEnvs(root) {
  const summary = table("Registered environments", [
    "Environment",
    "Status",
    { label: "Weight", numeric: true },
    { label: "Min alloc", numeric: true, title: "Minimum fraction of each batch" },
    { label: "Group size", numeric: true },
    { label: "In flight", numeric: true },
    { label: "Succeeded", numeric: true },
    { label: "Failed", numeric: true },
    { label: "Groups", numeric: true },
    { label: "Sequences", numeric: true },
    { label: "Mean score", numeric: true },
    { label: "Mean compl. tokens", numeric: true },
    "Mix",
  ]);
  summary.el.dataset.testid = "envs-table";
  const empty = h(
    "p",
    { class: "muted", hidden: true },
    "No environments registered on this run yet. Environments appear here after POST /register-env.",
  );
  const details = h("div", { class: "env-details" });
  const tasks = tasksCard();
  setChildren(
    root,
    h("h1", { class: "page-title" }, "Environments"),
    card("Registered environments", [empty, scroller(summary.el, "Registered environments")]),
    tasks.el,
    details,
  );
  /** @type {Map<number, ReturnType<typeof envDetail>>} */
  const cards = new Map();
  const tableChanged = changeTracker();

  return {
    title: "Envs",
    poll: true,
    async refresh({ run, signal, tick }) {
      const [stats, taskList] = await Promise.all([api.stats(run, signal), api.tasks(run, signal)]);
      tasks.update(taskList);
      empty.hidden = stats.envs.length > 0;
      summary.el.hidden = stats.envs.length === 0;
      if (tableChanged(stats.envs))
        setChildren(
          summary.tbody,
          stats.envs.map((env) => envRow(run, env)),
        );

      let added = false;
      for (const env of stats.envs) {
        const existing = cards.get(env.env_id);
        if (existing) existing.rename(env.name);
        else {
          const detail = envDetail(env);
          cards.set(env.env_id, detail);
          details.appendChild(detail.el);
          added = true;
        }
      }
      if (!added && tick % DETAIL_EVERY_TICKS !== 0) return;
      const results = await Promise.all(
        stats.envs.map((env) =>
          Promise.all([api.scores(run, env.env_id, signal), api.evals(run, env.env_id, signal)]),
        ),
      );
      stats.envs.forEach((env, i) => {
        const result = results[i];
        if (result) cards.get(env.env_id)?.update(result[0], result[1]);
      });
    },
    destroy() {
      for (const c of cards.values()) c.destroy();
    },
  };
}
