import { describe, expect, it } from "vitest";
import { DropBackoff } from "../../../src/env-sdk/runtime/drop-backoff";

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

describe("DropBackoff state", () => {
  it("a new instance built from a snapshot goes on where the old one stopped", () => {
    let now = 5_000;
    const first = new DropBackoff({ now: () => now });
    expect(first.snapshot()).toEqual({ consecutive: 0, lastSpawnAt: null, lastReportAt: null });
    for (let i = 0; i < 200; i++) first.dropped("all scores identical (1)");
    expect(first.maySpawn()).toBe(true);
    const saved = JSON.parse(JSON.stringify(first.snapshot()));
    expect(saved).toEqual({ consecutive: 200, lastSpawnAt: 5_000, lastReportAt: 5_000 });
    const second = new DropBackoff({ now: () => now, state: saved });
    expect(second.active).toBe(true);
    expect(second.maySpawn()).toBe(false);
    expect(second.dropped("all scores identical (1)")).toBeNull();
    now = 15_000;
    expect(second.maySpawn()).toBe(true);
    expect(second.dropped("all scores identical (1)")).toContain("in the last 200 groups");
  });
});
