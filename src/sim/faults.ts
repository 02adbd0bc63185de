export interface FaultRates {
  /** Share of generation requests answered with HTTP 500. */
  errorRate?: number;
  /** Share that never answers (the client's timeout fires). */
  timeoutRate?: number;
  /** Share whose JSON body is cut off mid-way (connection closed). */
  truncateRate?: number;
  /** Share delayed by slowMs. */
  slowRate?: number;
  slowMs?: number;
}

export type Fault = "error" | "timeout" | "truncate" | "slow" | null;

const ORDER: [Exclude<Fault, null>, keyof FaultRates, number][] = [
  ["error", "errorRate", 0.0],
  ["timeout", "timeoutRate", 0.25],
  ["truncate", "truncateRate", 0.5],
  ["slow", "slowRate", 0.75],
];

/**
 * Deterministic fault schedule: the k-th generation request gets a fault of a kind when
 * floor((k+1)·rate + offset) > floor(k·rate + offset), so faults are evenly spaced and exactly
 * `rate` of requests get them (a rate of 0.25 faults every 4th request), run after run.
 */
export function faultFor(requestNumber: number, rates: FaultRates): Fault {
  for (const [fault, key, offset] of ORDER) {
    const rate = Math.min(1, Math.max(0, Number(rates[key] ?? 0)));
    if (rate === 0) continue;
    const before = Math.floor(requestNumber * rate + offset);
    const after = Math.floor((requestNumber + 1) * rate + offset);
    if (after > before) return fault;
  }
  return null;
}
