/**
 * Per-judge calibration: a linear map raw → label fitted by least squares on part of a labelled
 * set, accepted only when it lowers the mean absolute error on the held-out rest.
 */
import type { JudgeCalibration } from "../../core/wire/judge-schemas";

export interface LabelledScore {
  /** The judge's uncalibrated score, 0..1. */
  raw: number;
  /** The reference score, 0..1. */
  label: number;
}

const clamp01 = (x: number) => Math.min(1, Math.max(0, x));

export function applyCalibration(
  raw: number,
  calibration: Pick<JudgeCalibration, "offset" | "scale" | "accepted"> | null | undefined,
): number {
  if (!calibration?.accepted) return raw;
  return clamp01(calibration.scale * raw + calibration.offset);
}

export function meanAbsoluteError(points: readonly LabelledScore[], map: (raw: number) => number) {
  if (points.length === 0) return 0;
  return points.reduce((sum, p) => sum + Math.abs(map(p.raw) - p.label), 0) / points.length;
}

/** Least squares label ≈ scale × raw + offset (a pure offset when raw does not vary). */
export function fitLinear(points: readonly LabelledScore[]): { offset: number; scale: number } {
  const n = points.length;
  if (n === 0) throw new Error("fitLinear: no points");
  const meanX = points.reduce((s, p) => s + p.raw, 0) / n;
  const meanY = points.reduce((s, p) => s + p.label, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const p of points) {
    sxx += (p.raw - meanX) ** 2;
    sxy += (p.raw - meanX) * (p.label - meanY);
  }
  if (sxx < 1e-12) return { offset: meanY - meanX, scale: 1 };
  const scale = sxy / sxx;
  return { offset: meanY - scale * meanX, scale };
}

export const MIN_CALIBRATION_POINTS = 4;

/**
 * Fits on every point but each `heldoutEvery`-th (those are held out), and accepts the fit when
 * its held-out mean absolute error is below the uncalibrated one.
 */
export function fitCalibration(
  points: readonly LabelledScore[],
  options: { heldoutEvery?: number } = {},
): JudgeCalibration {
  const every = options.heldoutEvery ?? 3;
  if (!Number.isInteger(every) || every < 2) throw new Error("heldoutEvery must be an integer ≥ 2");
  if (points.length < MIN_CALIBRATION_POINTS) {
    throw new Error(
      `calibration needs at least ${MIN_CALIBRATION_POINTS} labelled scores, got ${points.length}`,
    );
  }
  const heldout = points.filter((_, i) => i % every === every - 1);
  const fit = points.filter((_, i) => i % every !== every - 1);
  const { offset, scale } = fitLinear(fit);
  const before = meanAbsoluteError(heldout, (x) => x);
  const after = meanAbsoluteError(heldout, (x) => clamp01(scale * x + offset));
  return {
    offset,
    scale,
    accepted: after < before,
    heldout_mae_before: before,
    heldout_mae_after: after,
    n_fit: fit.length,
    n_heldout: heldout.length,
  };
}
