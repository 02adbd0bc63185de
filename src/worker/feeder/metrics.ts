/**
 * A feeder's step metrics, accumulated in its persisted state: what the env observe()d and what
 * was dropped (by reason) since the last step change, reported as that step's env metrics. Pure:
 * no bindings, no Durable Object (unit-tested in Node).
 */
import { summarizeObservations } from "../../env-sdk/base-env";
import { countDrop } from "../../env-sdk/runtime/rollout-core";

/** The part of a feeder's state these functions read and write. */
export interface FeederMetricsState {
  /** Dropped items and rejected groups by reason, over the feeder's life. */
  dropReasons?: Record<string, number>;
  /** Observations and drops since the last step change, reported as that step's env metrics. */
  stepObservations?: Record<string, number[]>;
  stepDrops?: Record<string, number>;
}

/** Observations kept per name per step: a summary needs no more, and the state stays small. */
export const MAX_OBSERVATIONS = 5000;

/** Counts a drop under `reason`, for the feeder's life and for the current step. */
export function countReason(state: FeederMetricsState, reason: string): void {
  // States saved before drop reasons were counted have none yet.
  state.dropReasons ??= {};
  countDrop(state.dropReasons, reason);
  state.stepDrops ??= {};
  countDrop(state.stepDrops, reason);
}

export function addObservations(
  state: FeederMetricsState,
  observations: Record<string, number[]>,
): void {
  state.stepObservations ??= {};
  for (const [name, values] of Object.entries(observations)) {
    const kept = state.stepObservations[name] ?? [];
    state.stepObservations[name] = kept;
    kept.push(...values.slice(0, Math.max(0, MAX_OBSERVATIONS - kept.length)));
  }
}

/** The env metrics of a finished step: summarized observations and drops by reason. */
export function stepMetrics(state: FeederMetricsState): Record<string, number> {
  const drops = Object.entries(state.stepDrops ?? {}).map(([reason, n]) => [
    // Metric names are at most 200 characters.
    `drops/${reason}`.slice(0, 200),
    n,
  ]);
  return { ...summarizeObservations(state.stepObservations ?? {}), ...Object.fromEntries(drops) };
}

/** After a step's metrics were stored: the next step starts from nothing. */
export function clearStepMetrics(state: FeederMetricsState): void {
  state.stepObservations = {};
  state.stepDrops = {};
}
