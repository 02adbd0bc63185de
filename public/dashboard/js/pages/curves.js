// @ts-check
// Curves: reward, accuracy and completion length per env over steps (or policy versions),
// evaluation metrics, drops by reason, curriculum level, staleness and throughput — all read
// from the run's metrics store (GET /v1/runs/{run}/metrics).
import { api } from "../api.js";
import { createChart } from "../charts.js";
import { h, setChildren, setText } from "../dom.js";
import { fmtInt } from "../format.js";
import { card } from "../page.js";
import { hashFor } from "../router.js";

// Curves move once per trainer step: fetch them every third poll (6 s).
const EVERY_TICKS = 3;

/**
 * @typedef {import("../api.js").MetricSeries} MetricSeries
 * @typedef {{label: string, xs: number[], ys: number[]}} Line
 * @typedef {{id: string, title: string, yLabel?: string,
 *   pick: (s: MetricSeries) => boolean, label: (s: MetricSeries) => string}} PanelSpec
 */

/**
 * Puts lines on one x axis (the union of their x values, ascending); a line's points that share
 * an x are averaged (several steps can share a policy version); missing points are null.
 * @param {Line[]} lines
 * @returns {[number[], ...(number | null)[][]]}
 */
export function alignLines(lines) {
  const xs = [...new Set(lines.flatMap((l) => l.xs))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const columns = lines.map((line) => {
    const sums = new Array(xs.length).fill(0);
    const counts = new Array(xs.length).fill(0);
    line.xs.forEach((x, i) => {
      const at = /** @type {number} */ (index.get(x));
      sums[at] += line.ys[i] ?? 0;
      counts[at] += 1;
    });
    return sums.map((sum, i) => (counts[i] > 0 ? sum / counts[i] : null));
  });
  return [xs, ...columns];
}

/**
 * @param {MetricSeries} s
 * @param {"step" | "policy_version"} xAxis
 * @returns {{xs: number[], ys: number[]}}
 */
function points(s, xAxis) {
  if (xAxis === "step") return { xs: s.steps, ys: s.values };
  const xs = [];
  const ys = [];
  for (let i = 0; i < s.steps.length; i++) {
    const v = s.policy_versions[i];
    if (v === null || v === undefined) continue;
    xs.push(v);
    ys.push(/** @type {number} */ (s.values[i]));
  }
  return { xs, ys };
}

/**
 * One chart card; the chart is rebuilt only when its set of lines changes.
 * @param {string} title
 * @param {string} xLabel
 * @param {string} [testId]
 */
function panel(title, xLabel, testId) {
  const chartEl = h("div", { class: "chart", role: "img", "aria-label": title });
  const note = h("p", { class: "muted small" });
  const el = card(title, [chartEl, note], { "data-testid": testId ?? null });
  /** @type {import("../charts.js").Chart | null} */
  let chart = null;
  let labelsKey = "";
  return {
    el,
    /** @param {Line[]} lines @param {string} emptyText */
    update(lines, emptyText) {
      const key = lines.map((l) => l.label).join("\u0000");
      if (key !== labelsKey) {
        chart?.destroy();
        chart = null;
        labelsKey = key;
      }
      chartEl.hidden = lines.length === 0;
      if (lines.length === 0) {
        setText(note, emptyText);
        return;
      }
      chart ??= createChart(chartEl, {
        series: lines.map((l) => ({ label: l.label })),
        time: false,
        xLabel,
        height: 200,
      });
      const data = alignLines(lines);
      chart.update(/** @type {import("../../vendor/uPlot.esm.js").AlignedData} */ (data));
      setText(note, `${fmtInt(data[0].length)} ${xLabel === "step" ? "steps" : "policy versions"}`);
    },
    destroy() {
      chart?.destroy();
      chart = null;
    },
  };
}

/** @param {string} prefix */
const startsWith = (prefix) => (/** @type {MetricSeries} */ s) => s.name.startsWith(prefix);

/** @type {import("../page.js").PageFactory} */
export function mountCurves(root, ctx) {
  const xAxis = ctx.route.query.get("x") === "policy_version" ? "policy_version" : "step";
  const xLabel = xAxis === "step" ? "step" : "policy version";
  /** @type {Map<number, string>} */
  let envNames = new Map();
  /** @param {number | null} id */
  const envName = (id) => (id === null ? "run" : (envNames.get(id) ?? `env ${id}`));

  /** @type {PanelSpec[]} */
  const fixed = [
    {
      id: "reward",
      title: "Reward (mean score per batch)",
      pick: (s) => s.kind === "train" && s.name === "train/score_mean",
      label: (s) => envName(s.env_id),
    },
    {
      id: "reward-spread",
      title: "Reward spread (std of scores per batch)",
      pick: (s) => s.kind === "train" && s.name === "train/score_std",
      label: (s) => envName(s.env_id),
    },
    {
      id: "accuracy",
      title: "Accuracy (share of sequences scoring above 0)",
      pick: (s) => s.kind === "train" && s.name === "train/percent_correct",
      label: (s) => envName(s.env_id),
    },
    {
      id: "completion",
      title: "Completion length (tokens per sequence)",
      pick: (s) => s.kind === "train" && s.name === "train/completion_lengths",
      label: (s) => envName(s.env_id),
    },
    {
      id: "drops",
      title: "Dropped groups by reason",
      pick: (s) => s.kind === "env" && s.name.startsWith("drops/"),
      label: (s) => `${s.name.slice("drops/".length)} · ${envName(s.env_id)}`,
    },
    {
      id: "curriculum",
      title: "Curriculum",
      pick: startsWith("curriculum/"),
      label: (s) => `${s.name} · ${envName(s.env_id)}`,
    },
    {
      id: "staleness",
      title: "Staleness (policy versions behind, mean per batch)",
      pick: (s) => s.kind === "train" && s.name === "train/staleness_mean",
      label: (s) => envName(s.env_id),
    },
    {
      id: "throughput",
      title: "Throughput (sequences per second between batches)",
      pick: (s) => s.kind === "train" && s.name === "train/sequences_per_s",
      label: () => "sequences/s",
    },
  ];
  const axisPicker = h(
    "select",
    { "aria-label": "X axis", "data-testid": "curves-x-axis" },
    h("option", { value: "step", selected: xAxis === "step" }, "step"),
    h(
      "option",
      { value: "policy_version", selected: xAxis === "policy_version" },
      "policy version",
    ),
  );
  axisPicker.addEventListener("change", () => {
    location.hash = hashFor("curves", {
      x: /** @type {HTMLSelectElement} */ (axisPicker).value,
    });
  });
  const empty = h(
    "p",
    { class: "muted", hidden: true },
    "No metrics yet: batch statistics appear when the trainer takes its first batch, env metrics when a step ends, evaluations when an env evaluates.",
  );
  const grid = h("div", { class: "curves-grid" });
  const evalGrid = h("div", { class: "curves-grid" });
  const envGrid = h("div", { class: "curves-grid" });
  setChildren(
    root,
    h(
      "h1",
      { class: "page-title" },
      "Curves ",
      h("label", { class: "small muted" }, "x axis ", axisPicker),
    ),
    empty,
    grid,
    h("h2", { class: "section-title" }, "Evaluations"),
    evalGrid,
    h("h2", { class: "section-title" }, "Env metrics"),
    envGrid,
  );
  const panels = new Map(fixed.map((spec) => [spec.id, panel(spec.title, xLabel, spec.id)]));
  for (const p of panels.values()) grid.appendChild(p.el);
  /** Panels made per metric name: evaluation results and other env-reported values. */
  /** @type {Map<string, ReturnType<typeof panel>>} */
  const dynamic = new Map();
  /**
   * @param {HTMLElement} parent @param {string} key @param {string} title
   */
  const dynamicPanel = (parent, key, title) => {
    let p = dynamic.get(key);
    if (!p) {
      p = panel(title, xLabel, key);
      dynamic.set(key, p);
      parent.appendChild(p.el);
    }
    return p;
  };
  /**
   * @param {MetricSeries[]} series @param {(s: MetricSeries) => string} label
   * @returns {Line[]}
   */
  const lines = (series, label) =>
    series
      .map((s) => ({ label: label(s), ...points(s, xAxis) }))
      .filter((l) => l.xs.length > 0)
      .sort((a, b) => a.label.localeCompare(b.label));

  let loaded = false;
  return {
    title: "Curves",
    poll: true,
    async refresh({ run, signal, tick }) {
      if (loaded && tick % EVERY_TICKS !== 0) return;
      loaded = true;
      const [stats, metrics] = await Promise.all([
        api.stats(run, signal),
        api.metrics(run, {}, signal),
      ]);
      envNames = new Map(stats.envs.map((e) => [e.env_id, e.name]));
      const all = metrics.series;
      empty.hidden = all.length > 0;
      for (const spec of fixed) {
        panels
          .get(spec.id)
          ?.update(lines(all.filter(spec.pick), spec.label), "Nothing reported yet.");
      }
      const evalNames = [...new Set(all.filter((s) => s.kind === "eval").map((s) => s.name))];
      for (const name of evalNames.sort()) {
        dynamicPanel(evalGrid, `eval:${name}`, name).update(
          lines(
            all.filter((s) => s.kind === "eval" && s.name === name),
            (s) => envName(s.env_id),
          ),
          "",
        );
      }
      const envMetricNames = [
        ...new Set(
          all
            .filter(
              (s) =>
                s.kind === "env" && s.name.endsWith("_mean") && !s.name.startsWith("curriculum/"),
            )
            .map((s) => s.name),
        ),
      ];
      for (const name of envMetricNames.sort()) {
        dynamicPanel(envGrid, `env:${name}`, name).update(
          lines(
            all.filter((s) => s.kind === "env" && s.name === name),
            (s) => envName(s.env_id),
          ),
          "",
        );
      }
    },
    destroy() {
      for (const p of panels.values()) p.destroy();
      for (const p of dynamic.values()) p.destroy();
    },
  };
}
