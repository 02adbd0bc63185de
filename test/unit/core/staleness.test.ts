import { describe, expect, it } from "vitest";
import { minAcceptedVersion, reasonWithStaleness } from "../../../src/core/batching/staleness";

describe("staleness", () => {
  it("accepts versions down to current - max_staleness, or all without a bound", () => {
    expect(minAcceptedVersion(5, 1)).toBe(4);
    expect(minAcceptedVersion(5, null)).toBeNull();
  });

  it("names staleness in a 204 reason only when groups were set aside", () => {
    expect(reasonWithStaleness("waiting for data", null)).toBe("waiting for data");
    const none = { evictedNow: 0, staleTotal: 0, currentVersion: 5, maxStaleness: 1 };
    expect(reasonWithStaleness("waiting for data", none)).toBe("waiting for data");
    const some = { ...none, evictedNow: 3, staleTotal: 7 };
    const reason = reasonWithStaleness("waiting for data", some);
    expect(reason).toMatch(/^waiting for data; staleness: max_staleness 1 at policy version 5/);
    expect(reason).toContain("3 queued group(s) sampled before policy version 4 were evicted");
    expect(reason).toContain("7 stale in total");
  });
});
