// @ts-check
// Thin wrapper over uPlot: responsive width, consistent styling, update-in-place.
import uPlot from "../vendor/uPlot.esm.js";
import { fmtNum } from "./format.js";

export const PALETTE = [
  "#2563eb",
  "#d97706",
  "#059669",
  "#7c3aed",
  "#db2777",
  "#0891b2",
  "#65a30d",
];

const AXIS = "#475569";
const GRID = "rgba(100, 116, 139, 0.18)";

/**
 * @typedef {{label: string, color?: string, fill?: boolean, format?: (v: number) => string}} SeriesSpec
 * @typedef {{series: SeriesSpec[], time?: boolean, xLabel?: string, yLabel?: string,
 *   height?: number, bars?: boolean, xFormat?: (v: number) => string}} ChartSpec
 * @typedef {{update(data: uPlot.AlignedData): void, destroy(): void}} Chart
 */

/**
 * X range for bar charts: pad by half a bar so the first and last bars are not cut in half.
 * @param {uPlot} u
 * @param {number} min
 * @param {number} max
 * @returns {[number, number]}
 */
function barRange(u, min, max) {
  const xs = u.data[0];
  const step = xs.length > 1 ? Math.abs((xs[1] ?? 0) - (xs[0] ?? 0)) : 1;
  return [min - step / 2, max + step / 2];
}

/**
 * @param {HTMLElement} container an element that is already in the document
 * @param {ChartSpec} spec
 * @returns {Chart}
 */
export function createChart(container, spec) {
  const height = spec.height ?? 200;
  const time = spec.time ?? true;
  const width = () => Math.max(260, Math.floor(container.clientWidth));
  const bars = spec.bars ? uPlot.paths.bars?.({ size: [0.92, 80], align: 0 }) : undefined;
  const xFormat = spec.xFormat;
  /** @type {uPlot.Options} */
  const options = {
    width: width(),
    height,
    scales: {
      x: bars ? { time, range: barRange } : { time },
      y: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max : 1] },
    },
    axes: [
      {
        stroke: AXIS,
        grid: { stroke: GRID },
        ticks: { stroke: GRID },
        ...(xFormat ? { values: (_u, splits) => splits.map((v) => xFormat(v)) } : {}),
        ...(spec.xLabel && !time ? { label: spec.xLabel } : {}),
      },
      {
        stroke: AXIS,
        grid: { stroke: GRID },
        ticks: { stroke: GRID },
        size: 56,
        values: (_u, splits) => splits.map((v) => fmtNum(v, 2)),
        ...(spec.yLabel ? { label: spec.yLabel } : {}),
      },
    ],
    series: [
      {
        label: spec.xLabel ?? "Time",
        ...(xFormat ? { value: (_u, v) => (v === null ? "–" : xFormat(v)) } : {}),
      },
      ...spec.series.map((s, i) => {
        const color = s.color ?? PALETTE[i % PALETTE.length] ?? "#2563eb";
        const format = s.format ?? ((/** @type {number} */ v) => fmtNum(v, 3));
        /** @type {uPlot.Series} */
        const series = {
          label: s.label,
          stroke: color,
          width: 2,
          spanGaps: true,
          value: (_u, v) => (v === null || v === undefined ? "–" : format(v)),
        };
        if (s.fill || bars) series.fill = `${color}33`;
        if (bars) {
          series.paths = bars;
          series.points = { show: false };
        }
        return series;
      }),
    ],
    legend: { live: true },
    cursor: { drag: { x: false, y: false } },
  };
  /** @type {uPlot | null} */
  let plot = null;
  const observer = new ResizeObserver(() => {
    if (plot && Math.abs(plot.width - width()) > 2) plot.setSize({ width: width(), height });
  });
  observer.observe(container);
  return {
    update(data) {
      if (plot) plot.setData(data);
      else plot = new uPlot(options, data, container);
    },
    destroy() {
      observer.disconnect();
      plot?.destroy();
      plot = null;
    },
  };
}
