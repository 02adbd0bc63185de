import { describe, expect, it } from "vitest";
import { passAtK, reportedKs, samplesPerItemMetrics } from "../../../src/env-sdk/evaluation";

/** C(n, k) by the multiplicative formula, for checking the estimator's product form. */
function choose(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
}

describe("pass@k", () => {
  it("is the unbiased estimator 1 − C(n−c, k) / C(n, k)", () => {
    for (const n of [1, 2, 5, 10, 16]) {
      for (let c = 0; c <= n; c++) {
        for (let k = 1; k <= n; k++) {
          expect(passAtK(n, c, k)).toBeCloseTo(1 - choose(n - c, k) / choose(n, k), 12);
        }
      }
    }
    expect(passAtK(5, 2, 1)).toBeCloseTo(0.4, 12);
    expect(passAtK(5, 2, 2)).toBeCloseTo(0.7, 12);
    expect(passAtK(5, 0, 5)).toBe(0);
    expect(passAtK(5, 1, 5)).toBe(1);
  });

  it("refuses a k above the number of samples", () => {
    expect(() => passAtK(2, 1, 3)).toThrow("pass@3 needs 1 ≤ k ≤ 2 samples");
  });

  it("reports avg@n and pass@ 1, powers of two and n, averaged over items", () => {
    expect(reportedKs(1)).toEqual([1]);
    expect(reportedKs(8)).toEqual([1, 2, 4, 8]);
    expect(reportedKs(6)).toEqual([1, 2, 4, 6]);
    const m = samplesPerItemMetrics([0, 2, 4], 4);
    expect(m["eval/avg@4"]).toBeCloseTo(0.5, 12);
    expect(m["eval/pass@1"]).toBeCloseTo(0.5, 12);
    expect(m["eval/pass@2"]).toBeCloseTo((0 + (1 - 1 / 6) + 1) / 3, 12);
    expect(m["eval/pass@4"]).toBeCloseTo(2 / 3, 12);
    expect(samplesPerItemMetrics([], 4)).toEqual({});
  });
});
