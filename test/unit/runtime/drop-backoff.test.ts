import { describe, expect, it } from "vitest";
import { DropBackoff } from "../../../src/env-workers/runtime/drop-backoff";

describe("DropBackoff", () => {
  it("after 200 consecutive drops: one item per second, the reason every 10 s", () => {
    let now = 0;
    const backoff = new DropBackoff({ now: () => now });
    const reports: string[] = [];
    for (let i = 0; i < 199; i++) expect(backoff.dropped("all scores identical (0)")).toBeNull();
    expect(backoff.maySpawn()).toBe(true);
    expect(backoff.maySpawn()).toBe(true); // not backing off yet: no limit
    reports.push(backoff.dropped("all scores identical (0)")!);
    expect(reports[0]).toBe(
      "all scores identical (0) in the last 200 groups: your reward gives every answer the same score; backing off to 1 item/s until a group is kept",
    );
    expect(backoff.maySpawn()).toBe(true);
    expect(backoff.maySpawn()).toBe(false);
    now = 999;
    expect(backoff.maySpawn()).toBe(false);
    now = 1000;
    expect(backoff.maySpawn()).toBe(true);
    now = 9_000;
    expect(backoff.dropped("all scores identical (0)")).toBeNull();
    now = 10_000;
    expect(backoff.dropped("all scores identical (0)")).not.toBeNull();
    backoff.kept();
    expect(backoff.active).toBe(false);
    expect(backoff.maySpawn()).toBe(true);
    expect(backoff.maySpawn()).toBe(true);
  });
});
