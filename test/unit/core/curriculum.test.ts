import { describe, expect, it } from "vitest";
import { Curriculum } from "../../../src/core/closed-loop/curriculum";

const config = { levels: 3, window: 3, advance_threshold: 0.8, fallback_threshold: 0.3 };

describe("Curriculum", () => {
  it("advances when the window's mean reaches the threshold, then starts a new window", () => {
    const c = new Curriculum(config);
    expect(c.record(1, 1)).toBeNull();
    expect(c.record(1, 0.7)).toBeNull();
    expect(c.record(1, 0.8)).toBe("advanced"); // mean 0.833
    expect(c.level).toBe(2);
    expect(c.checkpoint()).toEqual({ level: 2, window: [] });
  });

  it("falls back below the fall-back threshold, never under level 1 or over the last level", () => {
    const c = new Curriculum({ ...config, start_level: 2 });
    for (const s of [0.2, 0.1]) expect(c.record(2, s)).toBeNull();
    expect(c.record(2, 0.3)).toBe("fell_back"); // mean 0.2
    expect(c.level).toBe(1);
    for (let i = 0; i < 3; i++) c.record(1, 0);
    expect(c.level).toBe(1);
    const top = new Curriculum({ ...config, start_level: 3 });
    for (let i = 0; i < 3; i++) top.record(3, 1);
    expect(top.level).toBe(3);
  });

  it("ignores feedback for another level and keeps a sliding window", () => {
    const c = new Curriculum(config);
    expect(c.record(2, 1)).toBeNull();
    for (const s of [0, 0.9, 0.9]) c.record(1, s); // mean 0.6: stays
    expect(c.level).toBe(1);
    expect(c.record(1, 0.9)).toBe("advanced"); // window [0.9, 0.9, 0.9]
  });

  it("without a fall-back threshold it never falls back", () => {
    const c = new Curriculum({ levels: 3, start_level: 2, window: 2, advance_threshold: 0.5 });
    c.record(2, 0);
    c.record(2, 0);
    expect(c.level).toBe(2);
  });

  it("restores a checkpoint, clamping what is out of range", () => {
    const c = new Curriculum(config);
    c.restore({ level: 2, window: [0.5, "x", 0.6] });
    expect(c.checkpoint()).toEqual({ level: 2, window: [0.5, 0.6] });
    c.restore({ level: 9 });
    expect(c.level).toBe(3);
  });

  it("refuses inconsistent settings", () => {
    expect(() => new Curriculum({ ...config, start_level: 4 })).toThrow("start_level");
    expect(() => new Curriculum({ ...config, fallback_threshold: 0.9 })).toThrow(
      "fallback_threshold must be below advance_threshold",
    );
  });
});
